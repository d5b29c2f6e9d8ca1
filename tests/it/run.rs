//! `trajkit run PIPELINE.toml`: the one-pass run against the staged commands, determinism,
//! `--check`, `--print-config` and the reject threshold.

use std::collections::BTreeMap;
use std::fs;
use std::path::{Path, PathBuf};

use crate::common::{self, adp_corpus, corpus_std_files, sample_data, sample_pipeline, trajkit};

/// Every file under `dir/data`, by relative path.
fn data_files(dir: &Path) -> BTreeMap<String, Vec<u8>> {
    let data = dir.join("data");
    let mut out = BTreeMap::new();
    for e in fs::read_dir(&data).expect("data dir") {
        let p = e.expect("entry").path();
        let name = p.file_name().expect("name").to_string_lossy().into_owned();
        out.insert(name, fs::read(&p).expect("read"));
    }
    assert!(!out.is_empty(), "{} holds no data files", data.display());
    out
}

fn s(p: &Path) -> String {
    p.to_string_lossy().into_owned()
}

fn run_pipeline(dir: &Path, text: &str, extra: &[&str]) -> assert_cmd::assert::Assert {
    let file = dir.join("pipeline.toml");
    fs::write(&file, text).expect("write pipeline");
    trajkit()
        .current_dir(dir)
        .args(extra)
        .arg("run")
        .arg(&file)
        .assert()
}

fn staged(args: &[&str]) {
    let out = trajkit().args(args).output().expect("runs");
    assert!(
        out.status.code() == Some(0) || out.status.code() == Some(1),
        "{args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
}

#[test]
fn one_pass_equals_the_staged_commands_on_sample_data() {
    let tmp = tempfile::tempdir().expect("tmp");
    let out = tmp.path().join("run");
    run_pipeline(tmp.path(), &sample_pipeline(&out, ""), &[]).success();
    let sd = sample_data();
    let st = tmp.path().join("staged");
    fs::create_dir_all(&st).expect("mkdir");
    let p = |n: &str| s(&st.join(n));
    staged(&["convert", &s(&sd), "-o", &p("conv.jsonl")]);
    staged(&[
        "join",
        &p("conv.jsonl"),
        "--reflections",
        &s(&sd.join("reflexion/loop.jsonl")),
        "--reflections-from",
        "reflexion",
        "--memory-window",
        "2",
        "--rewards",
        &s(&sd.join("side/evaluations.rewards")),
        "--key",
        "/id",
        "--value",
        "/reward",
        "--outcome",
        "/resolved",
        "-o",
        &p("j1.jsonl"),
    ]);
    staged(&[
        "join",
        &p("j1.jsonl"),
        "--reflections",
        &s(&sd.join("ralph/tasks/task-001/reflections.jsonl")),
        "--reflections-from",
        "ralph",
        "-o",
        &p("j2.jsonl"),
    ]);
    staged(&[
        "export",
        &p("j2.jsonl"),
        "--to",
        "parquet",
        "--split",
        "train=0.8,validation=0.2",
        "-o",
        &p("parquet"),
    ]);
    for t in ["openai", "hf"] {
        staged(&[
            "export",
            &p("j2.jsonl"),
            "--to",
            t,
            "--infer-tools",
            "trajectory",
            "-o",
            &p(t),
        ]);
    }
    staged(&[
        "export",
        &p("j2.jsonl"),
        "--to",
        "sharegpt",
        "--inject-reflections",
        "--infer-tools",
        "trajectory",
        "-o",
        &p("sharegpt"),
    ]);
    for t in ["parquet", "openai", "hf", "sharegpt"] {
        assert_eq!(
            data_files(&out.join(t)),
            data_files(&st.join(t)),
            "{t} differs from the staged export"
        );
        assert!(out.join(t).join("manifest.json").is_file());
        assert!(out.join(t).join("run.json").is_file());
    }
    let rejects = fs::read_to_string(out.join("rejects.jsonl")).expect("rejects");
    assert!(rejects.contains("\"stage\":\"export[4]\""), "{rejects}");
    // The last export takes the trajectory; what it rejects is still written as the joined
    // trajectory the staged export read (rebuilt from the record).
    let joined = fs::read_to_string(st.join("j2.jsonl")).expect("joined");
    for line in rejects.lines() {
        let r: serde_json::Value = serde_json::from_str(line).expect("reject line");
        if r["stage"] == "export[4]" {
            let want = joined
                .lines()
                .map(|l| serde_json::from_str::<serde_json::Value>(l).expect("ADP"))
                .find(|t| t["id"] == r["record_id"])
                .expect("the rejected trajectory is in the staged join output");
            assert_eq!(r["record"], want);
        }
    }
}

#[test]
fn thread_count_does_not_change_the_bytes() {
    let tmp = tempfile::tempdir().expect("tmp");
    let mut all = Vec::new();
    for n in ["1", "2"] {
        let dir = tmp.path().join(n);
        fs::create_dir_all(&dir).expect("mkdir");
        let out = tmp.path().join(format!("out-{n}"));
        run_pipeline(&dir, &sample_pipeline(&out, ""), &["--threads", n]).success();
        let mut files = BTreeMap::new();
        for t in ["parquet", "openai", "hf", "sharegpt"] {
            let manifest = fs::read(out.join(t).join("manifest.json")).expect("manifest");
            files.insert(t, {
                let mut f = data_files(&out.join(t));
                f.insert("manifest.json".into(), manifest);
                f
            });
        }
        all.push(files);
    }
    assert_eq!(all[0], all[1]);
}

#[test]
fn one_pass_equals_the_staged_commands_on_the_corpus() {
    let Some(dir) = adp_corpus() else { return };
    let tmp = tempfile::tempdir().expect("tmp");
    let files = corpus_std_files(&dir);
    let out = tmp.path().join("run");
    let mut text = String::new();
    for f in &files {
        text.push_str(&format!(
            "[[input]]\npath = \"{}\"\nformat = \"adp\"\n\n",
            s(f)
        ));
    }
    text.push_str("[validate]\nmax_reject_rate = 1.0\n\n");
    for t in ["parquet", "openai", "sharegpt"] {
        text.push_str(&format!(
            "[[export]]\nto = \"{t}\"\noutput = \"{}\"\n\n",
            s(&out.join(t))
        ));
    }
    run_pipeline(tmp.path(), &text, &[]).code(predicates::ord::lt(2));
    let conv = tmp.path().join("conv.jsonl");
    let mut args = vec!["convert".to_owned(), "--from".into(), "adp".into()];
    args.extend(files.iter().map(|f| s(f)));
    args.extend(["-o".into(), s(&conv)]);
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    staged(&args);
    for t in ["parquet", "openai", "sharegpt"] {
        let st = tmp.path().join(format!("staged-{t}"));
        let (conv_s, st_s) = (s(&conv), s(&st));
        // run infers tool specs per trajectory (one pass); the staged export is told the same.
        let mut args = vec!["export", &conv_s, "--to", t, "-o", &st_s];
        if t != "parquet" {
            args.extend(["--infer-tools", "trajectory"]);
        }
        staged(&args);
        assert_eq!(data_files(&out.join(t)), data_files(&st), "{t}");
    }
}

#[test]
fn check_names_line_and_key_of_an_unknown_key() {
    let tmp = tempfile::tempdir().expect("tmp");
    let text =
        "[[input]]\npath = \"x\"\n\n[[export]]\nto = \"openai\"\noutput = \"o\"\nshard_rowz = 3\n";
    run_pipeline(tmp.path(), text, &[]).code(2);
    let file = tmp.path().join("pipeline.toml");
    let got = trajkit()
        .args(["run", "--check"])
        .arg(&file)
        .output()
        .expect("runs");
    assert_eq!(got.status.code(), Some(2));
    let err = String::from_utf8_lossy(&got.stderr);
    assert!(
        err.contains(&format!("{}:7: export.0.shard_rowz:", s(&file))),
        "{err}"
    );
}

#[test]
fn check_names_line_and_key_of_a_bad_value() {
    let tmp = tempfile::tempdir().expect("tmp");
    let file = tmp.path().join("p.toml");
    // A value the schema refuses, and one the option's own parser refuses.
    for (text, want) in [
        (
            "[[input]]\npath = \"x\"\n\n[[join]]\nrewards = [\"r\"]\nunmatched = \"maybe\"\n\n[[export]]\nto = \"hf\"\noutput = \"o\"\n",
            ":6: join.0.unmatched:",
        ),
        (
            "[[input]]\npath = \"x\"\n\n[[join]]\nrewards = [\"r\"]\nkey = \"{unclosed\"\n\n[[export]]\nto = \"hf\"\noutput = \"o\"\n",
            ":6: join.0.key:",
        ),
    ] {
        fs::write(&file, text).expect("write");
        let got = trajkit()
            .args(["run", "--check"])
            .arg(&file)
            .output()
            .expect("runs");
        assert_eq!(got.status.code(), Some(2));
        let err = String::from_utf8_lossy(&got.stderr);
        assert!(err.contains(want), "{want} not in {err}");
    }
    fs::write(
        &file,
        "[[input]]\npath = \"x\"\n[[export]]\nto = \"hf\"\noutput = \"o\"\n",
    )
    .expect("write");
    trajkit()
        .args(["run", "--check"])
        .arg(&file)
        .assert()
        .success();
}

#[test]
fn printed_config_runs_to_the_same_outputs() {
    let tmp = tempfile::tempdir().expect("tmp");
    let out = tmp.path().join("first");
    run_pipeline(tmp.path(), &sample_pipeline(&out, ""), &[]).success();
    let printed = trajkit()
        .current_dir(tmp.path())
        .args(["run", "--print-config", "pipeline.toml"])
        .output()
        .expect("runs");
    assert!(printed.status.success());
    let text = String::from_utf8(printed.stdout).expect("utf-8");
    assert!(
        text.contains("memory_window = 2") && text.contains("zstd_level = 3"),
        "{text}"
    );
    let again = text.replace(&s(&out), &s(&tmp.path().join("second")));
    fs::write(tmp.path().join("printed.toml"), &again).expect("write");
    trajkit()
        .current_dir(tmp.path())
        .args(["run", "printed.toml"])
        .assert()
        .success();
    for t in ["parquet", "openai", "hf", "sharegpt"] {
        assert_eq!(
            data_files(&out.join(t)),
            data_files(&tmp.path().join("second").join(t)),
            "{t}"
        );
    }
    let json = trajkit()
        .current_dir(tmp.path())
        .args(["run", "--print-config", "--json", "pipeline.toml"])
        .output()
        .expect("runs");
    let v: serde_json::Value = serde_json::from_slice(&json.stdout).expect("JSON");
    assert_eq!(v["export"][0]["row_group_bytes"], 100_000_000);
}

#[test]
fn rejects_above_the_rate_fail_with_a_message() {
    let tmp = tempfile::tempdir().expect("tmp");
    let out = tmp.path().join("o");
    // The sample data has one trajectory ShareGPT cannot hold: 1 of 53 records rejected, within
    // the file's max_reject_rate (0.5) but above the flag's.
    let file = tmp.path().join("pipeline.toml");
    fs::write(&file, sample_pipeline(&out, "")).expect("write");
    let failed = trajkit()
        .args(["run", "--max-reject-rate", "0"])
        .arg(&file)
        .output()
        .expect("runs");
    assert_eq!(failed.status.code(), Some(1));
    let err = String::from_utf8_lossy(&failed.stderr);
    assert!(err.contains("1 of 53 records rejected"), "{err}");
    assert!(err.contains("above the maximum reject rate 0"), "{err}");
    let run: serde_json::Value =
        serde_json::from_slice(&fs::read(out.join("openai/run.json")).expect("run.json"))
            .expect("JSON");
    assert_eq!(run["reject_rate_exceeded"], true);
}

#[test]
fn progress_json_reports_in_lines_that_parse_and_a_last_one_with_the_totals() {
    let tmp = tempfile::tempdir().expect("tmp");
    let file: PathBuf = tmp.path().join("p.toml");
    let samples = common::sample_data().join("adp");
    fs::write(
        &file,
        format!(
            "[[input]]\npath = {:?}\n[[export]]\nto = \"adp\"\noutput = \"o\"\n",
            samples.to_string_lossy()
        ),
    )
    .expect("write");
    let got = trajkit()
        .args(["run", "-q", "--progress", "json"])
        .arg(&file)
        .output()
        .expect("runs");
    assert_eq!(
        got.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&got.stderr)
    );
    let lines: Vec<serde_json::Value> = String::from_utf8_lossy(&got.stderr)
        .lines()
        .map(|l| serde_json::from_str(l).expect("every stderr line is JSON"))
        .collect();
    let last = lines.last().expect("a last line");
    assert_eq!(last["done"], true);
    assert_eq!(last["progress"], "run");
    // sample_data/adp holds 5 records (2 unversioned, 1 in 1.2, 2 in 1.5).
    assert_eq!(last["records"], 5);
    let total: u64 = fs::read_dir(&samples)
        .expect("dir")
        .map(|e| e.expect("entry").metadata().expect("meta").len())
        .sum();
    assert_eq!(last["bytes"], total);
    assert_eq!(last["total_bytes"], total);
    // The last line's stage counts are the summary's (run.json, which holds no timings so that
    // the same run writes the same bytes), and every record is counted.
    let report: serde_json::Value =
        serde_json::from_slice(&fs::read(tmp.path().join("o/run.json")).expect("run.json"))
            .expect("JSON");
    let mut untimed = last["stages"].clone();
    for s in untimed.as_array_mut().expect("stages") {
        s.as_object_mut().expect("stage").remove("seconds");
    }
    assert_eq!(untimed, report["summary"]["stages"]);
    let names: Vec<&str> = last["stages"]
        .as_array()
        .expect("stages")
        .iter()
        .map(|s| s["stage"].as_str().expect("name"))
        .collect();
    assert_eq!(names, ["convert", "export[1]"]);
    assert_eq!(last["stages"][0]["in"], 5);
    assert_eq!(last["stages"][1]["written"], 5);
    for s in last["stages"].as_array().expect("stages") {
        assert!(s["seconds"].as_f64().is_some_and(|t| t >= 0.0), "{s}");
    }

    // Not a pipeline key.
    fs::write(&file, "progress = \"json\"\n[[input]]\npath = \"x\"\n").expect("write");
    let got = trajkit()
        .args(["run", "--check"])
        .arg(&file)
        .output()
        .expect("runs");
    assert_eq!(got.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&got.stderr).contains("--progress json"));
}

#[test]
fn convert_mapping_keys_match_the_convert_options() {
    let tmp = tempfile::tempdir().expect("tmp");
    let sd = sample_data();
    let out = tmp.path().join("run");
    let text = format!(
        r#"[[input]]
path = "{sd}/ralph"
format = "ralph"

[[input]]
path = "{sd}/reflexion/loop.jsonl"

[convert]
ralph_plan = false
reflexion_closing_message = false

[[export]]
to = "adp"
output = "{out}"
"#,
        sd = s(&sd),
        out = s(&out)
    );
    run_pipeline(tmp.path(), &text, &[]).success();
    let converted = tmp.path().join("converted.jsonl");
    staged(&[
        "convert",
        "--ralph-plan",
        "false",
        "--reflexion-closing-message",
        "false",
        "-o",
        &s(&converted),
        &s(&sd.join("ralph")),
        &s(&sd.join("reflexion/loop.jsonl")),
    ]);
    let staged_out = tmp.path().join("staged");
    staged(&[
        "export",
        "--to",
        "adp",
        "-o",
        &s(&staged_out),
        &s(&converted),
    ]);
    let one_pass = data_files(&out);
    assert_eq!(one_pass, data_files(&staged_out));
    let text = String::from_utf8_lossy(one_pass.values().next().expect("a shard"));
    assert!(text.contains(r#""plan":"#), "the plan moved to details");
    let printed = trajkit()
        .current_dir(tmp.path())
        .args(["run", "--print-config", "pipeline.toml"])
        .output()
        .expect("runs");
    let printed = String::from_utf8_lossy(&printed.stdout);
    assert!(
        printed.contains("ralph_plan = false") && printed.contains("memabra_decisions = true"),
        "{printed}"
    );
}

#[test]
fn bars_are_hidden_when_stderr_is_not_a_terminal() {
    let tmp = tempfile::tempdir().expect("tmp");
    let file = tmp.path().join("pipeline.toml");
    fs::write(&file, sample_pipeline(&tmp.path().join("run"), "")).expect("write pipeline");
    let got = trajkit()
        .env_remove("CI")
        .arg("run")
        .arg(&file)
        .output()
        .expect("runs");
    assert_eq!(got.status.code(), Some(0));
    let stderr = String::from_utf8_lossy(&got.stderr);
    // A drawn bar moves the cursor with escape sequences and carriage returns.
    assert!(
        !stderr.contains('\x1b') && !stderr.contains('\r'),
        "{stderr:?}"
    );
    // The summary has a line per stage with its busy time, and one per input with its time.
    for stage in ["convert", "join[1]", "join[2]", "export[1]", "export[4]"] {
        assert!(
            stderr
                .lines()
                .any(|l| l.starts_with(&format!("run: {stage}")) && l.ends_with(" s busy")),
            "no summary line for {stage}: {stderr}"
        );
    }
    assert!(stderr
        .lines()
        .any(|l| l.starts_with("run: input ") && l.ends_with(" s")));
}

/// The library loads and runs a pipeline file without the command line, to the same outputs
/// as `trajkit run` (run.json aside, which holds the pipeline file's path).
#[test]
fn the_library_runs_a_pipeline_file_as_the_command_does() {
    use trajkit::commands::run::file::{Prepared, Request};
    use trajkit::config::pipeline::load;
    use trajkit::engine::pipeline::NoProgress;
    use trajkit::validate::report::{reporter, ReportFormat};

    let tmp = tempfile::tempdir().expect("tmp");
    let (cli_out, lib_out) = (tmp.path().join("cli"), tmp.path().join("lib"));
    for out in [&cli_out, &lib_out] {
        fs::create_dir_all(out).expect("out");
        fs::write(out.join("p.toml"), sample_pipeline(out, "")).expect("pipeline");
    }
    trajkit()
        .args(["-q", "run"])
        .arg(cli_out.join("p.toml"))
        .assert()
        .code(0);
    let pipeline = load(&s(&lib_out.join("p.toml"))).expect("the pipeline loads");
    let prepared = Prepared::new(&pipeline, Request::default(), &|_| {}).expect("prepared");
    let outcome = prepared
        .run(
            &NoProgress,
            reporter(ReportFormat::Human, Box::new(std::io::sink())),
            &|_| {},
        )
        .expect("the run");
    assert!(!outcome.exceeded);
    assert_eq!(outcome.summary.records, 53);
    // The outputs stay locked while the run is kept.
    drop(prepared);
    let files = |dir: &Path| -> BTreeMap<String, Vec<u8>> {
        common::tree(dir)
            .into_iter()
            .filter(|(name, _)| !name.ends_with("run.json") && !name.ends_with(".toml"))
            .collect()
    };
    let (lib, cli) = (files(&lib_out), files(&cli_out));
    assert_eq!(
        lib.keys().collect::<Vec<_>>(),
        cli.keys().collect::<Vec<_>>()
    );
    for (name, bytes) in &lib {
        assert!(cli.get(name) == Some(bytes), "{name} differs");
    }
    assert!(lib.keys().any(|k| k.starts_with("parquet/data/")));
}

//! `trajkit run --partition I/N` and `trajkit merge-manifests`: partitioned runs merged give the
//! rows of one run; globs in `[[input]] path`.

use std::collections::BTreeSet;
use std::fs;
use std::path::Path;

use crate::common::{adp_corpus, sample_data, sample_pipeline, trajkit};
use serde_json::Value;

fn s(p: &Path) -> String {
    p.to_string_lossy().into_owned()
}

/// Runs `trajkit ARGS... run FILE`; returns the exit code and stderr.
fn run(file: &Path, args: &[&str]) -> (i32, String) {
    let out = trajkit()
        .args(["run", "-q"])
        .arg(file)
        .args(args)
        .output()
        .expect("runs");
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

fn merge(dirs: &[&Path]) -> (i32, String) {
    let out = trajkit()
        .arg("merge-manifests")
        .args(dirs)
        .output()
        .expect("runs");
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

/// The rows of the data files of `dir/data` whose names start with `prefix`, as text lines
/// (Parquet read back with `trajkit convert --from parquet`).
fn rows(dir: &Path, prefix: &str) -> Vec<String> {
    let mut files: Vec<String> = fs::read_dir(dir.join("data"))
        .expect("data dir")
        .map(|e| e.expect("entry").path())
        .filter(|p| {
            p.file_name()
                .and_then(|n| n.to_str())
                .is_some_and(|n| n.starts_with(prefix))
        })
        .map(|p| s(&p))
        .collect();
    files.sort();
    if files.is_empty() {
        return Vec::new();
    }
    let text = if files[0].ends_with(".parquet") {
        let out = trajkit()
            .args(["convert", "-q", "--from", "parquet"])
            .args(&files)
            .output()
            .expect("runs");
        assert_eq!(out.status.code(), Some(0), "{files:?}");
        String::from_utf8(out.stdout).expect("utf-8")
    } else {
        files
            .iter()
            .map(|f| fs::read_to_string(f).expect("read"))
            .collect()
    };
    text.lines().map(str::to_owned).collect()
}

fn sorted(mut v: Vec<String>) -> Vec<String> {
    v.sort();
    v
}

fn json(path: &Path) -> Value {
    serde_json::from_slice(&fs::read(path).expect("read")).expect("JSON")
}

const COUNTS: [&str; 4] = ["in", "written", "filtered", "rejected"];

/// Partitions 0/2 and 1/2 into one directory, merged, against one unpartitioned run: the same
/// rows per export and split, disjoint partitions, counts that add up, the same card front
/// matter and the same rejects.
fn partitions_merged_equal_one_run(by: &str) {
    let tmp = tempfile::tempdir().expect("tmp");
    let one = tmp.path().join("one");
    let parts = tmp.path().join("parts");
    let file_one = tmp.path().join("one.toml");
    let file_parts = tmp.path().join("parts.toml");
    fs::write(
        &file_one,
        sample_pipeline(&one, "split = \"train=0.5,test=0.5\"\n"),
    )
    .expect("write");
    fs::write(
        &file_parts,
        sample_pipeline(&parts, "split = \"train=0.5,test=0.5\"\n"),
    )
    .expect("write");
    let (code, err) = run(&file_one, &[]);
    assert_eq!(code, 0, "{err}");
    for i in ["0/2", "1/2"] {
        let (code, err) = run(&file_parts, &["--partition", i, "--partition-by", by]);
        assert_eq!(code, 0, "{i}: {err}");
    }
    let targets = [
        ("parquet", &["train", "validation"][..]),
        ("openai", &["train"][..]),
        ("hf", &["train", "test"][..]),
        ("sharegpt", &["train"][..]),
    ];
    let dirs: Vec<_> = targets.iter().map(|(t, _)| parts.join(t)).collect();
    let dir_refs: Vec<&Path> = dirs.iter().map(|d| d.as_path()).collect();
    let (code, err) = merge(&dir_refs);
    assert_eq!(code, 0, "{err}");
    for (t, splits) in targets {
        let (a, b) = (one.join(t), parts.join(t));
        for split in splits {
            let want = sorted(rows(&a, &format!("{split}-")));
            assert!(!want.is_empty(), "{t} {split} has rows");
            let p0 = rows(&b, &format!("{split}-part-00000-of-00002-"));
            let p1 = rows(&b, &format!("{split}-part-00001-of-00002-"));
            let all = sorted(rows(&b, &format!("{split}-")));
            assert_eq!(
                all, want,
                "{by}: {t} {split}: merged rows differ from one run"
            );
            assert_eq!(p0.len() + p1.len(), all.len(), "{t} {split}");
            let first: BTreeSet<&String> = p0.iter().collect();
            assert!(
                p1.iter().all(|r| !first.contains(r)),
                "{by}: {t} {split}: a row is in both partitions"
            );
        }
        let merged = json(&b.join("manifest.json"));
        let single = json(&a.join("manifest.json"));
        let m0 = json(&b.join("manifest.part-00000-of-00002.json"));
        let m1 = json(&b.join("manifest.part-00001-of-00002.json"));
        for k in COUNTS {
            let sum =
                m0["counts"][k].as_u64().expect("count") + m1["counts"][k].as_u64().expect("count");
            assert_eq!(merged["counts"][k], sum, "{t} {k}");
            assert_eq!(merged["counts"][k], single["counts"][k], "{t} {k}");
        }
        assert_eq!(merged["partition"]["count"], 2);
        assert_eq!(merged["partition"]["by"], by);
        let files = |m: &Value| m["files"].as_array().expect("files").len();
        assert_eq!(files(&merged), files(&m0) + files(&m1), "{t}");
        for (ms, ss) in merged["splits"]
            .as_array()
            .expect("splits")
            .iter()
            .zip(single["splits"].as_array().expect("splits"))
        {
            assert_eq!(
                (&ms["name"], &ms["rows"]),
                (&ss["name"], &ss["rows"]),
                "{t}"
            );
        }
        let front = |d: &Path| {
            let card = fs::read_to_string(d.join("README.md")).expect("card");
            card.split("---").nth(1).expect("front matter").to_owned()
        };
        assert_eq!(front(&b), front(&a), "{t}: data_files of the card");
        assert!(b.join("run.part-00000-of-00002.json").is_file());
        assert!(!b.join("run.json").exists());
    }
    let rejects = |paths: &[&str], dir: &Path| {
        let mut lines: Vec<String> = Vec::new();
        for p in paths {
            let text = fs::read_to_string(dir.join(p)).expect("rejects");
            lines.extend(text.lines().map(str::to_owned));
        }
        sorted(lines)
    };
    let split_rejects = rejects(
        &[
            "rejects.part-00000-of-00002.jsonl",
            "rejects.part-00001-of-00002.jsonl",
        ],
        &parts,
    );
    assert!(!split_rejects.is_empty());
    assert_eq!(split_rejects, rejects(&["rejects.jsonl"], &one));
    let run_json = |i: u32| json(&parts.join(format!("openai/run.part-0000{i}-of-00002.json")));
    let single_run = json(&one.join("openai/run.json"));
    // By id, a record whose trajectories fall in both partitions counts in each.
    let counted: &[&str] = if by == "path" {
        &["records", "trajectories"]
    } else {
        &["trajectories"]
    };
    for k in counted {
        let sum: u64 = (0..2)
            .map(|i| run_json(i)["summary"][k].as_u64().expect("count"))
            .sum();
        assert_eq!(single_run["summary"][k], sum, "{k}");
    }
    let left = &run_json(0)["summary"]["partition"];
    assert_eq!(left["partition"], "0/2");
    let moved = if by == "path" { "inputs" } else { "records" };
    assert!(left[moved].as_u64().expect("count") > 0, "{left}");
}

#[test]
fn partitions_by_path_merged_equal_one_run() {
    partitions_merged_equal_one_run("path");
}

#[test]
fn partitions_by_id_merged_equal_one_run() {
    partitions_merged_equal_one_run("id");
}

/// The corpus's `sample_std.json` files, named by an absolute glob, partitioned by path into
/// separate directories, copied into one and merged.
#[test]
fn corpus_partitions_in_separate_directories_merge_after_copying() {
    let Some(dir) = adp_corpus() else { return };
    let tmp = tempfile::tempdir().expect("tmp");
    let text = |out: &Path| {
        format!(
            "[[input]]\npath = \"{}/*/sample_std.json\"\nformat = \"adp\"\n\n[validate]\n\
             max_reject_rate = 1.0\n\n[[export]]\nto = \"parquet\"\noutput = \"{}\"\n\n\
             [[export]]\nto = \"sharegpt\"\noutput = \"{}\"\n",
            s(&dir),
            s(&out.join("parquet")),
            s(&out.join("sharegpt"))
        )
    };
    let one = tmp.path().join("one");
    let file = tmp.path().join("one.toml");
    fs::write(&file, text(&one)).expect("write");
    assert!(run(&file, &[]).0 < 2);
    let merged = tmp.path().join("merged");
    for i in 0..3 {
        let out = tmp.path().join(format!("machine-{i}"));
        let f = tmp.path().join(format!("p{i}.toml"));
        fs::write(&f, text(&out)).expect("write");
        assert!(run(&f, &["--partition", &format!("{i}/3")]).0 < 2);
        for t in ["parquet", "sharegpt"] {
            let to = merged.join(t).join("data");
            fs::create_dir_all(&to).expect("mkdir");
            for e in fs::read_dir(out.join(t).join("data")).expect("data") {
                let p = e.expect("entry").path();
                fs::copy(&p, to.join(p.file_name().expect("name"))).expect("copy");
            }
            let m = format!("manifest.part-{i:05}-of-00003.json");
            fs::copy(out.join(t).join(&m), merged.join(t).join(&m)).expect("copy");
        }
    }
    let (code, err) = merge(&[&merged.join("parquet"), &merged.join("sharegpt")]);
    assert_eq!(code, 0, "{err}");
    for t in ["parquet", "sharegpt"] {
        assert_eq!(
            sorted(rows(&merged.join(t), "train-")),
            sorted(rows(&one.join(t), "train-")),
            "{t}"
        );
    }
}

/// A small pipeline over `sample_data/adp` (5 trajectories) exporting ADP lines to `out`.
fn small_pipeline(out: &Path, extra: &str) -> String {
    format!(
        "[[input]]\npath = \"{}\"\n\n[partition]\nby = \"id\"\n\n[[export]]\nto = \"adp\"\n\
         output = \"{}\"\n{extra}",
        s(&sample_data().join("adp")),
        s(out)
    )
}

#[test]
fn merge_refuses_missing_duplicate_inconsistent_and_stray_parts() {
    let tmp = tempfile::tempdir().expect("tmp");
    let out = tmp.path().join("adp");
    let file = tmp.path().join("p.toml");
    fs::write(&file, small_pipeline(&out, "")).expect("write");
    let (code, err) = run(&file, &["--partition", "0/2"]);
    assert_eq!(code, 0, "{err}");

    let (code, err) = merge(&[&out]);
    assert_eq!(code, 2);
    assert!(err.contains("partition 1/2 is missing"), "{err}");
    assert!(err.contains("--partition 1/2"), "{err}");

    let fake = out.join("manifest.part-00001-of-00002.json");
    fs::copy(out.join("manifest.part-00000-of-00002.json"), &fake).expect("copy");
    let (code, err) = merge(&[&out]);
    assert_eq!(code, 2);
    assert!(err.contains("partition 0/2 appears 2 times"), "{err}");
    assert!(err.contains("not the one its name says"), "{err}");
    fs::remove_file(&fake).expect("rm");

    let other = tmp.path().join("other.toml");
    fs::write(&other, small_pipeline(&out, "shard_rows = 1\n")).expect("write");
    let (code, err) = run(&other, &["--partition", "1/2"]);
    assert_eq!(code, 0, "{err}");
    let (code, err) = merge(&[&out]);
    assert_eq!(code, 2);
    assert!(
        err.contains("manifest.part-00001-of-00002.json was made with other options"),
        "{err}"
    );
    assert!(err.contains("shard_rows"), "{err}");

    let (code, err) = run(&file, &["--partition", "1/3"]);
    assert_eq!(code, 0, "{err}");
    let (code, err) = merge(&[&out]);
    assert_eq!(code, 2);
    assert!(err.contains("different partitionings"), "{err}");
    fs::remove_file(out.join("manifest.part-00001-of-00003.json")).expect("rm");

    // Part 1 again with the same options (replacing its shards), then a stray shard.
    fs::write(&file, small_pipeline(&out, "force = true\n")).expect("write");
    for i in ["0/2", "1/2"] {
        let (code, err) = run(&file, &["--partition", i]);
        assert_eq!(code, 0, "{err}");
    }
    let (code, err) = merge(&[&out]);
    assert_eq!(code, 2, "the 1/3 shards are still there");
    assert!(
        err.contains("data/train-part-00001-of-00003-00000-of-00001.jsonl is in no part manifest"),
        "{err}"
    );
    assert!(
        !out.join("manifest.json").exists(),
        "a refused merge writes nothing"
    );
    fs::remove_file(out.join("data/train-part-00001-of-00003-00000-of-00001.jsonl")).expect("rm");
    let (code, err) = merge(&[&out]);
    assert_eq!(code, 0, "{err}");
    let merged = json(&out.join("manifest.json"));
    assert_eq!(merged["counts"]["written"], 5);
    assert!(out.join("README.md").is_file());

    // A partition run again replaces its share: the merged manifest and card go until the next
    // merge.
    let (code, err) = run(&file, &["--partition", "0/2"]);
    assert_eq!(code, 0, "{err}");
    assert!(!out.join("manifest.json").exists());
    assert!(!out.join("README.md").exists());
    let (code, err) = merge(&[&out]);
    assert_eq!(code, 0, "{err}");
    assert_eq!(json(&out.join("manifest.json")), merged);
}

#[test]
fn partition_arguments_are_checked() {
    let tmp = tempfile::tempdir().expect("tmp");
    let file = tmp.path().join("p.toml");
    fs::write(&file, small_pipeline(&tmp.path().join("o"), "")).expect("write");
    for bad in ["2/2", "0/0", "x/3", "1"] {
        let (code, err) = run(&file, &["--check", "--partition", bad]);
        assert_eq!(code, 2, "{bad}");
        assert!(err.contains("expected I/N with 0 <= I < N"), "{bad}: {err}");
    }
    let (code, err) = run(&file, &["--check", "--partition", "1/2"]);
    assert_eq!(code, 0, "{err}");
    let (code, err) = run(&file, &["--check", "--partition-by", "id"]);
    assert_eq!(code, 2, "--partition-by needs --partition: {err}");
    // A join that rejects orphans cannot be partitioned.
    let text = small_pipeline(&tmp.path().join("o"), "")
        + &format!(
            "\n[[join]]\nrewards = [\"{}\"]\nkey = \"/id\"\nvalue = \"/reward\"\norphans = \"reject\"\n",
            s(&sample_data().join("side/evaluations.rewards"))
        );
    fs::write(&file, text).expect("write");
    let (code, err) = run(&file, &["--partition", "0/2"]);
    assert_eq!(code, 2);
    assert!(
        err.contains("not supported yet: orphans = \"reject\""),
        "{err}"
    );
}

#[test]
fn globs_expand_relative_to_the_pipeline_file_sorted() {
    let tmp = tempfile::tempdir().expect("tmp");
    let pipe = tmp.path().join("pipe");
    let record = fs::read_to_string(sample_data().join("adp/v1.5.jsonl")).expect("sample");
    for f in [
        "logs/b/x.jsonl",
        "logs/a.jsonl",
        "logs/a/deep/y.jsonl",
        "logs/notes.txt",
    ] {
        let p = pipe.join(f);
        fs::create_dir_all(p.parent().expect("parent")).expect("mkdir");
        fs::write(p, &record).expect("write");
    }
    let file = pipe.join("p.toml");
    fs::write(
        &file,
        "[[input]]\npath = \"logs/**/*.jsonl\"\nformat = \"adp\"\n\n[[export]]\nto = \"adp\"\noutput = \"out\"\n",
    )
    .expect("write");
    // Run from the parent directory: the pattern is relative to the file's directory.
    let got = trajkit()
        .current_dir(tmp.path())
        .args(["run", "-q", "pipe/p.toml"])
        .output()
        .expect("runs");
    assert_eq!(
        got.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&got.stderr)
    );
    let report = json(&pipe.join("out/run.json"));
    let inputs: Vec<&str> = report["summary"]["inputs"]
        .as_array()
        .expect("inputs")
        .iter()
        .map(|i| i["path"].as_str().expect("path"))
        .collect();
    assert_eq!(
        inputs,
        [
            "pipe/logs/a.jsonl",
            "pipe/logs/a/deep/y.jsonl",
            "pipe/logs/b/x.jsonl"
        ]
    );
    let printed = trajkit()
        .current_dir(tmp.path())
        .args(["run", "--print-config", "pipe/p.toml"])
        .output()
        .expect("runs");
    let text = String::from_utf8_lossy(&printed.stdout);
    assert!(text.contains("path = \"pipe/logs/**/*.jsonl\""), "{text}");

    fs::write(
        &file,
        "[[input]]\npath = \"logs/*.parquet\"\n\n[[export]]\nto = \"adp\"\noutput = \"out2\"\n",
    )
    .expect("write");
    let got = trajkit()
        .current_dir(tmp.path())
        .args(["run", "pipe/p.toml"])
        .output()
        .expect("runs");
    let err = String::from_utf8_lossy(&got.stderr);
    assert_eq!(got.status.code(), Some(3), "{err}");
    assert!(
        err.contains("pipe/logs/*.parquet: the pattern matches no file"),
        "{err}"
    );

    fs::write(
        &file,
        "[[input]]\npath = \"logs/[.jsonl\"\n\n[[export]]\nto = \"adp\"\noutput = \"out2\"\n",
    )
    .expect("write");
    let got = trajkit()
        .args(["run", "--check"])
        .arg(&file)
        .output()
        .expect("runs");
    let err = String::from_utf8_lossy(&got.stderr);
    assert_eq!(got.status.code(), Some(2), "{err}");
    assert!(
        err.contains(":2: input.0.path: not a valid glob pattern"),
        "{err}"
    );
}

/// Tool specs inferred from the whole dataset (`infer_tools = "dataset"`) are the same in every
/// partition: one tool called with another argument in each of 8 files; every row's spec of it
/// lists all 8 arguments, by path and by id. Without the key, `run` infers per trajectory.
#[test]
fn every_partition_infers_tool_specs_from_the_whole_dataset() {
    let tmp = tempfile::tempdir().expect("tmp");
    let sample = fs::read_to_string(sample_data().join("adp/v1.5.jsonl")).expect("sample");
    let template: Value = serde_json::from_str(sample.lines().nth(1).expect("line")).expect("JSON");
    fs::create_dir_all(tmp.path().join("logs")).expect("mkdir");
    for i in 0..8 {
        let mut t = template.clone();
        t["id"] = format!("t{i}").into();
        t["content"][1]["kwargs"] = serde_json::json!({ format!("arg{i}"): i });
        fs::write(
            tmp.path().join(format!("logs/f{i}.jsonl")),
            format!("{t}\n"),
        )
        .expect("write");
    }
    let file = tmp.path().join("p.toml");
    let text = |out: &str| {
        format!(
            "[[input]]\npath = \"logs/*.jsonl\"\nformat = \"adp\"\n\n[[export]]\nto = \"openai\"\n\
             output = \"{out}\"\ninfer_tools = \"dataset\"\n"
        )
    };
    // run's default is one pass: each row's spec lists the arguments of its own calls only.
    let one_pass = text("one-pass").replace("infer_tools = \"dataset\"\n", "");
    fs::write(&file, one_pass).expect("write");
    let (code, err) = run(&file, &[]);
    assert_eq!(code, 0, "{err}");
    for row in rows(&tmp.path().join("one-pass"), "train-") {
        let r: Value = serde_json::from_str(&row).expect("JSON");
        let props = r["tools"][0]["function"]["parameters"]["properties"]
            .as_object()
            .expect("properties");
        assert_eq!(props.len(), 1, "{props:?}");
    }
    fs::write(&file, text("one")).expect("write");
    let (code, err) = run(&file, &[]);
    assert_eq!(code, 0, "{err}");
    let want = sorted(rows(&tmp.path().join("one"), "train-"));
    assert_eq!(want.len(), 8);
    for row in &want {
        let r: Value = serde_json::from_str(row).expect("JSON");
        let props = &r["tools"][0]["function"]["parameters"]["properties"];
        for i in 0..8 {
            assert!(props.get(format!("arg{i}")).is_some(), "arg{i} in {props}");
        }
    }
    for by in ["path", "id"] {
        let out = format!("parts-{by}");
        fs::write(&file, text(&out)).expect("write");
        for i in ["0/2", "1/2"] {
            let (code, err) = run(&file, &["--partition", i, "--partition-by", by]);
            assert_eq!(code, 0, "{err}");
        }
        let dir = tmp.path().join(&out);
        assert!(!rows(&dir, "train-part-00000-").is_empty(), "{by}");
        assert!(!rows(&dir, "train-part-00001-").is_empty(), "{by}");
        assert_eq!(sorted(rows(&dir, "train-")), want, "{by}");
    }
}

/// `run --list-inputs`: the expanded inputs, one a line; a partition's share by path (the shares
/// split the list), every input by id; nothing written.
#[test]
fn list_inputs_prints_each_partitions_share() {
    let tmp = tempfile::tempdir().expect("tmp");
    let record = fs::read_to_string(sample_data().join("adp/v1.5.jsonl")).expect("sample");
    fs::create_dir_all(tmp.path().join("logs/deep")).expect("mkdir");
    for f in [
        "logs/a.jsonl",
        "logs/b.jsonl",
        "logs/deep/c.jsonl",
        "logs/d.jsonl",
    ] {
        fs::write(tmp.path().join(f), &record).expect("write");
    }
    let file = tmp.path().join("p.toml");
    fs::write(
        &file,
        "[[input]]\npath = \"logs\"\n\n[[export]]\nto = \"adp\"\noutput = \"out\"\n",
    )
    .expect("write");
    let list = |args: &[&str]| -> Vec<String> {
        let out = trajkit()
            .args(["run", "-q", "--list-inputs"])
            .arg(&file)
            .args(args)
            .output()
            .expect("runs");
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(0), "{err}");
        String::from_utf8_lossy(&out.stdout)
            .lines()
            .map(str::to_owned)
            .collect()
    };
    let all = list(&[]);
    let dir = s(&tmp.path().join("logs"));
    let want: Vec<String> = ["a.jsonl", "b.jsonl", "d.jsonl", "deep/c.jsonl"]
        .iter()
        .map(|f| format!("{dir}/{f}"))
        .collect();
    assert_eq!(sorted(all.clone()), want);
    let mut shares = list(&["--partition", "0/2"]);
    let other = list(&["--partition", "1/2", "--partition-by", "path"]);
    assert!(shares.iter().all(|p| !other.contains(p)), "disjoint");
    shares.extend(other);
    assert_eq!(sorted(shares), want);
    assert_eq!(list(&["--partition", "1/2", "--partition-by", "id"]), all);
    assert!(!tmp.path().join("out").exists(), "nothing written");
}

/// A segmented export counts rows: its merged summary says so, as the export's own does; an
/// export without segments still counts trajectories.
#[test]
fn merging_a_segmented_export_counts_rows() {
    let tmp = tempfile::tempdir().expect("tmp");
    let fixtures = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/segment");
    let (segmented, whole) = (tmp.path().join("seg"), tmp.path().join("whole"));
    let mut text = String::new();
    for f in ["claude-code.jsonl", "codex.jsonl"] {
        text += &format!("[[input]]\npath = \"{}\"\n\n", s(&fixtures.join(f)));
    }
    text += &format!(
        "[partition]\nby = \"id\"\n\n[[export]]\nto = \"openai\"\noutput = \"{}\"\n\
         segments = \"compaction\"\n\n[[export]]\nto = \"openai\"\noutput = \"{}\"\n",
        s(&segmented),
        s(&whole)
    );
    let file = tmp.path().join("p.toml");
    fs::write(&file, text).expect("write");
    for i in ["0/2", "1/2"] {
        let (code, err) = run(&file, &["--partition", i]);
        assert_eq!(code, 0, "{err}");
    }
    let (code, err) = merge(&[&segmented, &whole]);
    assert_eq!(code, 0, "{err}");
    assert!(
        err.contains("4 rows in (2 trajectories, 2 cut at compactions into 4 segments), 4 written"),
        "{err}"
    );
    assert!(err.contains("2 trajectories in, 2 written"), "{err}");
}

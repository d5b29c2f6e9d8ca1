//! Training-ready exports (`--to tokens`): chat templates, tokenizers, loss masks and length
//! limits; and, with Python (`TRAJKIT_PYTHON`), the same tokens and masks as transformers'
//! `apply_chat_template` on the shared corpus, and the target loaded by `datasets`
//! (`tests/training/*.py`).

use std::path::{Path, PathBuf};
use std::process::Command;

use arrow_array::{Array, Int32Array, Int8Array, ListArray, StringArray};
use parquet::arrow::arrow_reader::ParquetRecordBatchReaderBuilder;
use serde_json::{json, Value};

use crate::common::{adp_corpus, corpus_std_files, trajkit, valid_v15};

/// A file of `tests/fixtures/templates/`.
pub fn fixture(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/templates")
        .join(name)
}

/// One `tokens` row: id, input_ids, assistant_masks, labels, n_tokens.
pub type Row = (String, Vec<i32>, Vec<i8>, Vec<i32>, i32);

/// The rows of a `tokens` export in `dir`.
pub fn read_rows(dir: &Path) -> Vec<Row> {
    let mut files: Vec<PathBuf> = std::fs::read_dir(dir.join("data"))
        .expect("data dir")
        .map(|e| e.expect("entry").path())
        .collect();
    files.sort();
    let mut out = Vec::new();
    for f in files {
        let file = std::fs::File::open(&f).expect("open");
        let reader = ParquetRecordBatchReaderBuilder::try_new(file)
            .expect("parquet")
            .build()
            .expect("reader");
        for batch in reader {
            let b = batch.expect("batch");
            let col = |name: &str| b.column_by_name(name).expect(name).clone();
            let ids = col("id");
            let ids = ids.as_any().downcast_ref::<StringArray>().expect("id");
            let list = |name: &str| {
                col(name)
                    .as_any()
                    .downcast_ref::<ListArray>()
                    .expect(name)
                    .clone()
            };
            let (input, masks, labels) =
                (list("input_ids"), list("assistant_masks"), list("labels"));
            let n = col("n_tokens");
            let n = n.as_any().downcast_ref::<Int32Array>().expect("n_tokens");
            for i in 0..b.num_rows() {
                let ints = |l: &ListArray| {
                    l.value(i)
                        .as_any()
                        .downcast_ref::<Int32Array>()
                        .expect("int32")
                        .values()
                        .to_vec()
                };
                let m = masks.value(i);
                let m = m.as_any().downcast_ref::<Int8Array>().expect("int8");
                out.push((
                    ids.value(i).to_owned(),
                    ints(&input),
                    m.values().to_vec(),
                    ints(&labels),
                    n.value(i),
                ));
            }
        }
    }
    out
}

/// Writes `trajectories` to `dir/in.jsonl`.
pub fn write_input(dir: &Path, trajectories: &[Value]) -> PathBuf {
    let path = dir.join("in.jsonl");
    let text: String = trajectories.iter().map(|t| format!("{t}\n")).collect();
    std::fs::write(&path, text).expect("write");
    path
}

/// `trajkit export --to tokens` with the words tokenizer and `template`; exit code, stderr.
pub fn export_tokens(input: &Path, out: &Path, template: &Path, extra: &[&str]) -> (i32, String) {
    export_with_template("tokens", input, out, template, extra)
}

/// `trajkit export --to TO` with the words tokenizer and `template`; exit code, stderr.
pub fn export_with_template(
    to: &str,
    input: &Path,
    out: &Path,
    template: &Path,
    extra: &[&str],
) -> (i32, String) {
    let o = trajkit()
        .args(["export", "-q", "--to", to, "-o"])
        .arg(out)
        .arg("--chat-template")
        .arg(template)
        .arg("--tokenizer")
        .arg(fixture("words.tokenizer.json"))
        .args(extra)
        .arg(input)
        .output()
        .expect("runs");
    (
        o.status.code().expect("exit code"),
        String::from_utf8_lossy(&o.stderr).into_owned(),
    )
}

/// The `manifest.json` of an export in `dir`.
pub fn manifest(dir: &Path) -> Value {
    serde_json::from_slice(&std::fs::read(dir.join("manifest.json")).expect("manifest"))
        .expect("json")
}

#[test]
fn tokens_rows_carry_ids_masks_labels_and_counts() {
    let tmp = tempfile::tempdir().expect("temp dir");
    let input = write_input(tmp.path(), &[valid_v15()]);
    let out = tmp.path().join("out");
    let (code, err) = export_tokens(&input, &out, &fixture("generation.jinja"), &[]);
    assert_eq!(code, 0, "{err}");
    let rows = read_rows(&out);
    assert_eq!(rows.len(), 1);
    let (id, ids, masks, labels, n) = &rows[0];
    assert_eq!(id, "m1");
    assert_eq!(*n as usize, ids.len());
    assert!(masks.contains(&1) && masks.contains(&0));
    for ((t, m), l) in ids.iter().zip(masks).zip(labels) {
        assert_eq!(*l, if *m == 1 { *t } else { -100 });
    }
    let m = manifest(&out);
    assert_eq!(m["target"], "tokens");
    assert_eq!(m["counts"]["tokens"]["total"], json!(*n));
    assert_eq!(m["counts"]["tokens"]["max"], json!(*n));
}

#[test]
fn turns_marked_not_for_training_and_train_on_choices_shape_the_mask() {
    let tmp = tempfile::tempdir().expect("temp dir");
    let mut copied = valid_v15();
    copied["id"] = json!("m2");
    // The first assistant turn (content index 1) came from copied context.
    copied["details"] = json!({"atif": {"excluded_from_training": [1]}});
    let input = write_input(tmp.path(), &[valid_v15(), copied]);
    let trained = |template: &str, extra: &[&str]| -> Vec<usize> {
        let out = tmp
            .path()
            .join(format!("out-{template}-{}", extra.join("-")));
        let (code, err) = export_tokens(&input, &out, &fixture(template), extra);
        assert_eq!(code, 0, "{err}");
        read_rows(&out)
            .iter()
            .map(|r| r.2.iter().filter(|m| **m == 1).count())
            .collect()
    };
    for template in ["generation.jinja", "chatml_tools.jinja"] {
        let all = trained(template, &[]);
        assert!(all[1] < all[0], "{template}: {all:?}");
        let last = trained(template, &["--train-on", "last-assistant"]);
        assert!(
            last[0] < all[0] && last[0] == last[1],
            "{template}: {last:?}"
        );
        let every = trained(template, &["--train-on", "all"]);
        assert!(
            every[0] > all[0] && every[1] < every[0],
            "{template}: {every:?}"
        );
    }
}

#[test]
fn stats_counts_the_tokens_the_tokens_target_writes() {
    let tmp = tempfile::tempdir().expect("temp dir");
    let input = write_input(tmp.path(), &[valid_v15()]);
    let template = fixture("generation.jinja");
    let out = tmp.path().join("out");
    assert_eq!(export_tokens(&input, &out, &template, &[]).0, 0);
    let o = trajkit()
        .args(["stats", "--json", "--chat-template"])
        .arg(&template)
        .arg("--tokenizer")
        .arg(fixture("words.tokenizer.json"))
        .arg(&input)
        .output()
        .expect("runs");
    assert_eq!(
        o.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&o.stderr)
    );
    let stats: Value = serde_json::from_slice(&o.stdout).expect("json");
    assert_eq!(
        stats["tokens"]["total"],
        manifest(&out)["counts"]["tokens"]["total"]
    );
}

#[test]
fn sft_targets_mark_the_turns_not_for_training() {
    let tmp = tempfile::tempdir().expect("temp dir");
    let mut copied = valid_v15();
    copied["details"] = json!({"atif": {"excluded_from_training": [1]}});
    let input = write_input(tmp.path(), &[copied]);
    let row = |to: &str| -> Value {
        let dir = tmp.path().join(to);
        let o = trajkit()
            .args(["export", "-q", "--to", to, "-o"])
            .arg(&dir)
            .arg(&input)
            .output()
            .expect("runs");
        assert_eq!(
            o.status.code(),
            Some(0),
            "{}",
            String::from_utf8_lossy(&o.stderr)
        );
        let text =
            std::fs::read_to_string(dir.join("data/train-00000-of-00001.jsonl")).expect("shard");
        serde_json::from_str(text.lines().next().expect("a row")).expect("json")
    };
    let pick = |v: &Value, key: &str| -> Vec<Value> {
        v["messages"]
            .as_array()
            .expect("messages")
            .iter()
            .filter(|m| m["role"] == "assistant")
            .map(|m| m[key].clone())
            .collect()
    };
    assert_eq!(
        pick(&row("hf"), "training"),
        vec![json!(false), Value::Null, Value::Null]
    );
    assert_eq!(
        pick(&row("openai"), "weight"),
        vec![json!(0), json!(1), json!(1)]
    );
}

#[test]
fn max_tokens_drops_or_truncates_at_a_whole_assistant_turn() {
    let tmp = tempfile::tempdir().expect("temp dir");
    let input = write_input(tmp.path(), &[valid_v15()]);
    let template = fixture("generation.jinja");
    let full = tmp.path().join("full");
    assert_eq!(export_tokens(&input, &full, &template, &[]).0, 0);
    let n = read_rows(&full)[0].4;
    let limit = (n - 5).to_string();

    let dropped = tmp.path().join("dropped");
    let (code, err) = export_tokens(&input, &dropped, &template, &["--max-tokens", &limit]);
    assert_eq!(code, 0, "{err}");
    let m = manifest(&dropped);
    assert_eq!(m["counts"]["filtered_by"]["max_tokens"], 1, "{m}");
    assert_eq!(m["counts"]["written"], 0);

    let cut = tmp.path().join("cut");
    let (code, err) = export_tokens(
        &input,
        &cut,
        &template,
        &["--max-tokens", &limit, "--overlength", "truncate"],
    );
    assert_eq!(code, 0, "{err}");
    let rows = read_rows(&cut);
    assert_eq!(rows.len(), 1);
    assert!(rows[0].4 < n - 5 + 1 && rows[0].2.contains(&1), "{rows:?}");

    let none = tmp.path().join("none");
    let (code, _) = export_tokens(
        &input,
        &none,
        &template,
        &["--max-tokens", "3", "--overlength", "truncate"],
    );
    assert_eq!(code, 0);
    assert_eq!(manifest(&none)["counts"]["filtered_by"]["max_tokens"], 1);
}

#[test]
fn a_template_that_raises_rejects_the_record_with_its_message_and_line_on_every_target() {
    let tmp = tempfile::tempdir().expect("temp dir");
    let template = tmp.path().join("t.jinja");
    std::fs::write(
        &template,
        "{% for m in messages %}{{ m.content }}\n{% endfor %}\n{% if messages|length > 3 %}\n{{ raise_exception('too many turns') }}\n{% endif %}\n",
    )
    .expect("write");
    let input = write_input(tmp.path(), &[valid_v15()]);
    // The tokens target, and the others counting tokens (docs/training.md).
    for to in ["tokens", "parquet", "openai", "hf", "sharegpt"] {
        let out = tmp.path().join(to);
        let rejects = tmp.path().join(format!("{to}.rejects.jsonl"));
        let (code, err) = export_with_template(
            to,
            &input,
            &out,
            &template,
            &["--rejects", rejects.to_str().expect("utf-8 path")],
        );
        assert_eq!(code, 1, "{to}: {err}");
        let text = std::fs::read_to_string(&rejects).expect("rejects");
        assert!(
            text.contains("too many turns") && text.contains("line 4"),
            "{to}: {text}"
        );
        let counts = &manifest(&out)["counts"];
        assert_eq!(
            (&counts["rejected"], &counts["written"]),
            (&json!(1), &json!(0)),
            "{to}"
        );
    }
}

#[test]
fn a_template_or_tokenizer_that_does_not_load_is_a_usage_error_naming_the_file() {
    let tmp = tempfile::tempdir().expect("temp dir");
    let input = write_input(tmp.path(), &[valid_v15()]);
    let broken = tmp.path().join("broken.jinja");
    std::fs::write(&broken, "{% for m in messages %}").expect("write");
    let (code, err) = export_tokens(&input, &tmp.path().join("a"), &broken, &[]);
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("broken.jinja"), "{err}");

    let o = trajkit()
        .args(["export", "-q", "--to", "tokens", "-o"])
        .arg(tmp.path().join("b"))
        .arg("--chat-template")
        .arg(fixture("generation.jinja"))
        .arg("--tokenizer")
        .arg(&broken)
        .arg(&input)
        .output()
        .expect("runs");
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(2), "{err}");
    assert!(
        err.contains("--tokenizer") && err.contains("broken.jinja"),
        "{err}"
    );

    let (code, err) = export_tokens(
        &input,
        &tmp.path().join("c"),
        &fixture("header_blocks.tokenizer_config.json"),
        &["--chat-template-name", "tool_use"],
    );
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("default, plain"), "{err}");
}

fn python() -> Option<PathBuf> {
    if let Some(p) = std::env::var_os("TRAJKIT_PYTHON") {
        return Some(PathBuf::from(p));
    }
    if std::env::var_os("CI").is_some() {
        panic!("TRAJKIT_PYTHON is not set but CI is: .ci/run must provide the Python");
    }
    eprintln!("skipping: TRAJKIT_PYTHON is not set (a Python with transformers, tokenizers)");
    None
}

fn run_python(python: &Path, script: &str, args: &[&Path], tmp: &Path) -> String {
    let out = Command::new(python)
        .arg(
            Path::new(env!("CARGO_MANIFEST_DIR"))
                .join("tests/training")
                .join(script),
        )
        .args(args)
        .env("HF_HOME", tmp.join("hf-home"))
        .env("HF_HUB_OFFLINE", "1")
        .env("HF_DATASETS_OFFLINE", "1")
        .env("HF_DATASETS_DISABLE_PROGRESS_BARS", "1")
        .env("TOKENIZERS_PARALLELISM", "false")
        .output()
        .expect("python runs");
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    assert!(
        out.status.success(),
        "{script} failed:\n{stdout}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    stdout
}

/// Every template of `tests/fixtures/templates` and two tokenizers trained on the corpus
/// (BPE and byte-level): the `tokens` export has transformers' input_ids and assistant masks
/// on every row it writes, and `datasets` loads it with the documented column types.
#[test]
fn tokens_match_transformers_on_the_corpus() {
    let Some(corpus) = adp_corpus() else { return };
    let Some(python) = python() else { return };
    let tmp = tempfile::tempdir().expect("temp dir");
    let t = tmp.path();
    let inputs = corpus_std_files(&corpus);
    let hf = t.join("hf");
    let o = trajkit()
        .args(["export", "-q", "--to", "hf", "-o"])
        .arg(&hf)
        .args(&inputs)
        .output()
        .expect("runs");
    assert!(
        matches!(o.status.code(), Some(0 | 1)),
        "{}",
        String::from_utf8_lossy(&o.stderr)
    );
    let jsonl: Vec<PathBuf> = std::fs::read_dir(hf.join("data"))
        .expect("hf data")
        .map(|e| e.expect("entry").path())
        .collect();
    let toks = t.join("tok");
    let mut args: Vec<&Path> = vec![&toks];
    args.extend(jsonl.iter().map(PathBuf::as_path));
    run_python(&python, "build_tokenizers.py", &args, t);

    let templates = [
        "chatml_tools.jinja",
        "header_blocks.tokenizer_config.json",
        "reasoning.jinja",
        "generation.jinja",
        "tool_results.jinja",
    ];
    // The model families' shapes (build_tokenizers.py) with the templates that write thinking
    // and tool-call tags (their added tokens) and generation blocks.
    let families = [
        "llama3.json",
        "qwen2.json",
        "o200k.json",
        "deepseek.json",
        "mistral.json",
        "llama2.json",
        "gemma.json",
    ];
    let mut cases = Vec::new();
    for (i, template) in templates.iter().enumerate() {
        let more = match *template {
            "reasoning.jinja" | "generation.jinja" | "tool_results.jinja" => &families[..],
            _ => &[],
        };
        for tokenizer in ["bpe.json", "bytelevel.json", "split.json"]
            .iter()
            .chain(more)
        {
            let dir = t.join(format!("tokens-{i}-{tokenizer}"));
            let tok = toks.join(tokenizer);
            let o = trajkit()
                .args(["export", "--no-progress", "--to", "tokens", "-o"])
                .arg(&dir)
                .arg("--chat-template")
                .arg(fixture(template))
                .arg("--tokenizer")
                .arg(&tok)
                .args(&inputs)
                .output()
                .expect("runs");
            let stderr = String::from_utf8_lossy(&o.stderr);
            assert!(
                matches!(o.status.code(), Some(0 | 1)),
                "{template}: {stderr}"
            );
            // Every BPE shape but the word-level one is trajkit's own encoder's, and the export
            // says so once.
            let own = "encoded by trajkit's own BPE encoder";
            let says = if *tokenizer == "bpe.json" {
                "encoded by the tokenizers library"
            } else {
                own
            };
            assert_eq!(stderr.matches(says).count(), 1, "{tokenizer}: {stderr}");
            cases.push(json!({"template": fixture(template), "tokenizer": tok, "tokens": dir}));
        }
    }
    let case_file = t.join("cases.json");
    std::fs::write(&case_file, Value::Array(cases).to_string()).expect("write");
    let stdout = run_python(&python, "compare.py", &[&hf, &case_file], t);
    println!("{stdout}");
    assert!(stdout.contains("datasets loads tokens"), "{stdout}");
}

/// A pipeline's `to = "tokens"` export, its template and tokenizer named relative to the
/// pipeline file, writes the rows `export --to tokens` writes, and `run.json` counts them.
#[test]
fn run_writes_the_tokens_export_writes() {
    let tmp = tempfile::tempdir().expect("temp dir");
    let input = write_input(tmp.path(), &[valid_v15()]);
    let direct = tmp.path().join("direct");
    let (code, err) = export_tokens(&input, &direct, &fixture("generation.jinja"), &[]);
    assert_eq!(code, 0, "{err}");
    let model = tmp.path().join("model");
    std::fs::create_dir(&model).expect("mkdir");
    for (from, to) in [
        ("generation.jinja", "template.jinja"),
        ("words.tokenizer.json", "tokenizer.json"),
    ] {
        std::fs::copy(fixture(from), model.join(to)).expect("copy");
    }
    let pipeline = tmp.path().join("p.toml");
    std::fs::write(
        &pipeline,
        "[[input]]\npath = \"in.jsonl\"\nformat = \"adp\"\n\n[[export]]\nto = \"tokens\"\n\
         output = \"out/tokens\"\nchat_template = \"model/template.jinja\"\n\
         tokenizer = \"model/tokenizer.json\"\n",
    )
    .expect("write");
    let o = trajkit()
        .args(["run", "-q"])
        .arg(&pipeline)
        .output()
        .expect("runs");
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let out = tmp.path().join("out/tokens");
    assert_eq!(read_rows(&out), read_rows(&direct));
    let m = manifest(&out);
    assert_eq!(m["target"], "tokens");
    assert_eq!(m["counts"]["tokens"], manifest(&direct)["counts"]["tokens"]);
    let run: Value =
        serde_json::from_slice(&std::fs::read(out.join("run.json")).expect("run.json"))
            .expect("json");
    assert_eq!(
        run["summary"]["exports"][0]["tokens"], m["counts"]["tokens"],
        "{run}"
    );
}

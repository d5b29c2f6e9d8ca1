//! Token counts on the `parquet`, `openai`, `hf` and `sharegpt` targets (`--chat-template`,
//! `--tokenizer`): the `n_tokens` column and key, the manifest's counts, the refusals, the
//! pipeline keys (a template that raises: `training::`).

use std::path::Path;

use arrow_array::{Array, Int32Array};
use arrow_schema::DataType;
use parquet::arrow::arrow_reader::ParquetRecordBatchReaderBuilder;
use serde_json::{json, Value};

use crate::common::{json_lines, trajkit, valid_v15};
use crate::training::{
    export_tokens, export_with_template, fixture, manifest, read_rows, write_input,
};

/// Two trajectories, the second with a thought (so where thoughts go changes the count).
fn trajectories() -> Vec<Value> {
    let mut thinking = valid_v15();
    thinking["id"] = json!("m2");
    thinking["content"][5]["reasoning_content"] = json!("the file says hello");
    vec![valid_v15(), thinking]
}

/// The JSON rows of a one-shard SFT export.
fn json_rows(dir: &Path) -> Vec<Value> {
    json_lines(&std::fs::read(dir.join("data/train-00000-of-00001.jsonl")).expect("shard"))
}

/// The `n_tokens` column of a one-shard Parquet export, after checking its type.
fn parquet_counts(dir: &Path) -> Vec<(String, i32)> {
    let file = std::fs::File::open(dir.join("data/train-00000-of-00001.parquet")).expect("open");
    let builder = ParquetRecordBatchReaderBuilder::try_new(file).expect("parquet");
    let field = builder
        .schema()
        .field_with_name("n_tokens")
        .expect("n_tokens")
        .clone();
    assert_eq!(
        (field.data_type(), field.is_nullable()),
        (&DataType::Int32, false)
    );
    let mut out = Vec::new();
    for batch in builder.build().expect("reader") {
        let b = batch.expect("batch");
        let ids = b.column_by_name("id").expect("id");
        let ids = ids
            .as_any()
            .downcast_ref::<arrow_array::StringArray>()
            .expect("utf8");
        let n = b.column_by_name("n_tokens").expect("n_tokens");
        let n = n.as_any().downcast_ref::<Int32Array>().expect("int32");
        for i in 0..b.num_rows() {
            out.push((ids.value(i).to_owned(), n.value(i)));
        }
    }
    out
}

/// The `(id, n_tokens)` of a `tokens` export.
fn token_counts(dir: &Path) -> Vec<(String, i32)> {
    read_rows(dir).into_iter().map(|r| (r.0, r.4)).collect()
}

#[test]
fn every_target_counts_the_tokens_the_tokens_target_writes() {
    let tmp = tempfile::tempdir().expect("temp dir");
    let input = write_input(tmp.path(), &trajectories());
    // A template that leaves `reasoning_content` out: a thought counts only inline.
    let template = fixture("generation.jinja");
    // hf and parquet place thoughts as tokens does by default (reasoning_content); openai and
    // sharegpt inline them (think), which `--thoughts think` gives the tokens target.
    let reasoning = tmp.path().join("tokens");
    let think = tmp.path().join("tokens-think");
    assert_eq!(export_tokens(&input, &reasoning, &template, &[]).0, 0);
    assert_eq!(
        export_tokens(&input, &think, &template, &["--thoughts", "think"]).0,
        0
    );
    let (reasoning_counts, think_counts) = (token_counts(&reasoning), token_counts(&think));
    assert_ne!(reasoning_counts, think_counts, "the thought should count");
    for (to, tokens_dir, counts) in [
        ("parquet", &reasoning, &reasoning_counts),
        ("hf", &reasoning, &reasoning_counts),
        ("sharegpt", &think, &think_counts),
        ("openai", &think, &think_counts),
    ] {
        let out = tmp.path().join(to);
        let (code, err) = export_with_template(to, &input, &out, &template, &[]);
        assert_eq!(code, 0, "{to}: {err}");
        match to {
            "parquet" => assert_eq!(&parquet_counts(&out), counts),
            "openai" => {
                // OpenAI's format documents no other key: the rows carry none.
                let rows = json_rows(&out);
                assert_eq!(rows.len(), 2);
                assert!(rows.iter().all(|r| r.get("n_tokens").is_none()), "{rows:?}");
            }
            _ => {
                let rows: Vec<(String, i32)> = json_rows(&out)
                    .iter()
                    .map(|r| {
                        let n = r["n_tokens"].as_i64().expect("an integer n_tokens");
                        (r["id"].as_str().expect("id").to_owned(), n as i32)
                    })
                    .collect();
                assert_eq!(&rows, counts, "{to}");
            }
        }
        assert_eq!(
            manifest(&out)["counts"]["tokens"],
            manifest(tokens_dir)["counts"]["tokens"],
            "{to}"
        );
        let card = std::fs::read_to_string(out.join("README.md")).expect("card");
        assert_eq!(card.contains("`n_tokens`"), to != "openai", "{to}: {card}");
    }
}

#[test]
fn without_a_tokenizer_rows_have_no_count() {
    let tmp = tempfile::tempdir().expect("temp dir");
    let input = write_input(tmp.path(), &trajectories());
    for to in ["parquet", "hf"] {
        let out = tmp.path().join(to);
        let o = trajkit()
            .args(["export", "-q", "--to", to, "-o"])
            .arg(&out)
            .arg(&input)
            .output()
            .expect("runs");
        assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
        assert!(manifest(&out)["counts"].get("tokens").is_none());
        if to == "hf" {
            assert!(json_rows(&out).iter().all(|r| r.get("n_tokens").is_none()));
        } else {
            let file =
                std::fs::File::open(out.join("data/train-00000-of-00001.parquet")).expect("open");
            let b = ParquetRecordBatchReaderBuilder::try_new(file).expect("parquet");
            assert!(b.schema().field_with_name("n_tokens").is_err());
        }
    }
}

#[test]
fn the_options_are_refused_where_they_do_not_apply() {
    let tmp = tempfile::tempdir().expect("temp dir");
    let input = write_input(tmp.path(), &[valid_v15()]);
    let template = fixture("generation.jinja");
    let tokenizer = fixture("words.tokenizer.json");
    let (template, tokenizer) = (
        template.to_str().expect("utf-8"),
        tokenizer.to_str().expect("utf-8"),
    );
    let both = ["--chat-template", template, "--tokenizer", tokenizer];
    let cases: Vec<(&str, Vec<&str>, &str)> = vec![
        (
            "hf",
            vec!["--chat-template", template],
            "token counts on --to hf need --chat-template FILE and --tokenizer FILE",
        ),
        (
            "parquet",
            vec!["--tokenizer", tokenizer],
            "token counts on --to parquet need --chat-template FILE and --tokenizer FILE",
        ),
        (
            "adp",
            both.to_vec(),
            "--chat-template needs --to tokens, or parquet, openai, hf or sharegpt (token counts)",
        ),
        (
            "openai",
            [&both[..], &["--max-tokens", "10"]].concat(),
            "--max-tokens needs --to tokens",
        ),
        (
            "sharegpt",
            [&both[..], &["--overlength", "truncate"]].concat(),
            "--overlength needs --to tokens",
        ),
        (
            "parquet",
            [&both[..], &["--train-reasoning", "false"]].concat(),
            "--train-reasoning needs --to tokens",
        ),
        (
            "hf",
            [&both[..], &["--train-on", "final-answer"]].concat(),
            "--train-on final-answer needs --to tokens",
        ),
    ];
    for (i, (to, args, message)) in cases.into_iter().enumerate() {
        let o = trajkit()
            .args(["export", "-q", "--to", to, "-o"])
            .arg(tmp.path().join(i.to_string()))
            .args(&args)
            .arg(&input)
            .output()
            .expect("runs");
        let err = String::from_utf8_lossy(&o.stderr);
        assert_eq!(o.status.code(), Some(2), "{to} {args:?}: {err}");
        assert!(err.contains(message), "{to} {args:?}: {err}");
    }
}

/// A pipeline's `parquet` and `openai` exports with `chat_template` and `tokenizer` count what
/// `export` counts: the same template and tokenizer, so they share the count of the trajectory
/// without a thought, and not that of the one with a thought, which they place differently.
#[test]
fn run_counts_tokens_on_parquet_and_openai_exports() {
    let tmp = tempfile::tempdir().expect("temp dir");
    let input = write_input(tmp.path(), &trajectories());
    let model = tmp.path().join("model");
    std::fs::create_dir(&model).expect("mkdir");
    for (from, to) in [
        ("generation.jinja", "template.jinja"),
        ("words.tokenizer.json", "tokenizer.json"),
    ] {
        std::fs::copy(fixture(from), model.join(to)).expect("copy");
    }
    let keys = "chat_template = \"model/template.jinja\"\ntokenizer = \"model/tokenizer.json\"\n";
    let pipeline = tmp.path().join("p.toml");
    std::fs::write(
        &pipeline,
        format!(
            "[[input]]\npath = \"in.jsonl\"\nformat = \"adp\"\n\n\
             [[export]]\nto = \"parquet\"\noutput = \"out/parquet\"\n{keys}\n\
             [[export]]\nto = \"openai\"\noutput = \"out/openai\"\n{keys}"
        ),
    )
    .expect("write");
    let o = trajkit()
        .args(["run", "-q"])
        .arg(&pipeline)
        .output()
        .expect("runs");
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    // A template that leaves `reasoning_content` out: a thought counts only inline.
    let template = fixture("generation.jinja");
    let mut direct_counts = Vec::new();
    for (to, thoughts) in [("parquet", "reasoning"), ("openai", "think")] {
        let direct = tmp.path().join(format!("direct-{to}"));
        let (code, err) = export_tokens(&input, &direct, &template, &["--thoughts", thoughts]);
        assert_eq!(code, 0, "{err}");
        let out = tmp.path().join("out").join(to);
        assert_eq!(
            manifest(&out)["counts"]["tokens"],
            manifest(&direct)["counts"]["tokens"],
            "{to}"
        );
        if to == "parquet" {
            assert_eq!(parquet_counts(&out), token_counts(&direct));
        }
        direct_counts.push(token_counts(&direct));
    }
    assert_eq!(direct_counts[0][0], direct_counts[1][0]);
    assert_ne!(
        direct_counts[0][1], direct_counts[1][1],
        "the thought should count"
    );
}

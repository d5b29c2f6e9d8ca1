//! `export --to parquet` and `convert --from parquet`: the documented schema and metadata,
//! the columns derived from details, row groups and shards, determinism, the lossless round
//! trip on the corpus, and diagnostics for bad Parquet input.

use std::fs::File;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use crate::common::{
    adp_corpus, converted_samples, corpus_std_files, files_in, json_lines, trajkit,
};
use arrow_array::cast::AsArray;
use arrow_array::types::{Float64Type, Int64Type};
use arrow_array::{Array, RecordBatch, StringArray};
use parquet::arrow::arrow_reader::ParquetRecordBatchReaderBuilder;
use parquet::arrow::ArrowWriter;
use parquet::basic::Compression;
use serde_json::{json, Value};
use trajkit::parquet::columns::Columns;
use trajkit::parquet::row::StepRow;
use trajkit::parquet::Row;

/// Runs trajkit with `args`; returns the exit code and stderr.
fn run(args: &[&str]) -> (i32, String) {
    let out = trajkit().args(args).output().expect("runs");
    (
        out.status.code().expect("exit code"),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

fn s(p: &Path) -> &str {
    p.to_str().expect("utf-8 path")
}

/// The data files of an export, in name order.
fn data_files(dir: &Path) -> Vec<PathBuf> {
    files_in(&dir.join("data"))
}

/// Every record batch of a Parquet file, with its metadata.
fn read(path: &Path) -> (Vec<RecordBatch>, parquet::file::metadata::ParquetMetaData) {
    let file = File::open(path).expect("open");
    let builder = ParquetRecordBatchReaderBuilder::try_new(file).expect("a Parquet file");
    let metadata = builder.metadata().as_ref().clone();
    let batches = builder
        .build()
        .expect("reader")
        .collect::<Result<Vec<_>, _>>()
        .expect("batches");
    (batches, metadata)
}

fn strings<'a>(batch: &'a RecordBatch, name: &str) -> &'a StringArray {
    batch.column_by_name(name).expect(name).as_string::<i32>()
}

/// The ADP corpus samples plus `sample_data/` converted, as export inputs (name, path).
fn corpus_inputs(tmp: &Path) -> Option<Vec<(String, PathBuf)>> {
    let corpus = adp_corpus()?;
    let samples = converted_samples(tmp);
    let mut inputs: Vec<(String, PathBuf)> = corpus_std_files(&corpus)
        .into_iter()
        .map(|p| {
            let name = p
                .parent()
                .and_then(|d| d.file_name())
                .map(|n| n.to_string_lossy().into_owned())
                .unwrap_or_default();
            (name, p)
        })
        .collect();
    assert_eq!(inputs.len(), 17);
    inputs.push(("sample_data".into(), samples));
    Some(inputs)
}

fn concat(files: &[PathBuf]) -> Vec<u8> {
    files
        .iter()
        .flat_map(|f| std::fs::read(f).expect("read"))
        .collect()
}

#[test]
fn every_corpus_dataset_round_trips_losslessly_and_byte_stably() {
    let tmp = tempfile::tempdir().expect("temp dir");
    let Some(inputs) = corpus_inputs(tmp.path()) else {
        return;
    };
    for (name, input) in &inputs {
        let pq = tmp.path().join(format!("{name}-pq"));
        let adp = tmp.path().join(format!("{name}-adp"));
        let back = tmp.path().join(format!("{name}-back.jsonl"));
        let again = tmp.path().join(format!("{name}-again"));
        for (to, dir) in [("parquet", &pq), ("adp", &adp)] {
            let (code, stderr) = run(&["export", "-q", s(input), "--to", to, "-o", s(dir)]);
            assert_eq!(code, 0, "{name} --to {to}: {stderr}");
        }
        let (code, stderr) = run(&["convert", "-q", s(&pq.join("data")), "-o", s(&back)]);
        assert_eq!(code, 0, "{name}: {stderr}");
        let expected = concat(&data_files(&adp));
        assert!(!expected.is_empty(), "{name}");
        assert!(
            std::fs::read(&back).expect("back") == expected,
            "{name}: Parquet -> ADP differs from the ADP export"
        );
        let (code, stderr) = run(&["export", "-q", s(&back), "--to", "parquet", "-o", s(&again)]);
        assert_eq!(code, 0, "{name}: {stderr}");
        assert!(
            concat(&data_files(&again)) == concat(&data_files(&pq)),
            "{name}: ADP -> Parquet -> ADP -> Parquet is not byte-stable"
        );
        let manifest: Value =
            serde_json::from_slice(&std::fs::read(pq.join("manifest.json")).expect("manifest"))
                .expect("JSON");
        let (batches, _) = read(&data_files(&pq)[0]);
        let rows: usize = batches.iter().map(RecordBatch::num_rows).sum();
        assert_eq!(
            manifest["counts"]["written"].as_u64(),
            Some(rows as u64),
            "{name}"
        );
    }
}

/// The top-level columns as docs/export.md documents them.
const DOCUMENTED_COLUMNS: &[&str] = &[
    "id",
    "schema_version",
    "source_format",
    "outcome",
    "reward",
    "reward_components",
    "reflections",
    "num_steps",
    "num_actions",
    "num_observations",
    "num_chars",
    "available_custom_tools",
    "available_code_languages",
    "steps",
    "details",
];

/// The fields of a `steps` element as docs/export.md documents them.
const DOCUMENTED_STEP_FIELDS: &[&str] = &[
    "class",
    "content",
    "content_json",
    "language",
    "function",
    "kwargs",
    "description",
    "reasoning_content",
    "name",
    "source",
    "annotations",
    "html",
    "axtree",
    "url",
    "image",
    "viewport_size",
    "tool_call_id",
    "reward",
];

fn fixture_with_details(dir: &Path) -> PathBuf {
    let traj = json!({
        "schema_version": "1.5.0",
        "id": "loop-1#2",
        "content": [
            {"class_": "text_observation", "content": "Fix the bug.", "name": null, "source": "user"},
            {"class_": "api_action", "function": "read", "kwargs": {"path": "a.py"},
             "description": "Look first.", "tool_call_id": "c1"},
            {"class_": "text_observation", "content": "héllo", "name": "read",
             "source": "environment", "tool_call_id": "c1", "reward": 0.5},
            {"class_": "message_action", "content": "Done.", "description": null}
        ],
        "details": {
            "source": {"format": "reflexion"},
            "outcome": {"status": "failure"},
            "reward": 0.25,
            "reward_components": {"tests": 0.5, "note": "not a number", "style": 1},
            "reflections": [
                {"source": "reflexion", "iteration": 2, "text": "Check the path.",
                 "lessons": ["read before edit"], "confidence": 0.9},
                "not an object"
            ]
        }
    });
    let path = dir.join("details.jsonl");
    std::fs::write(&path, format!("{traj}\n")).expect("write");
    path
}

#[test]
fn the_file_has_the_documented_schema_metadata_and_derived_columns() {
    let tmp = tempfile::tempdir().expect("temp dir");
    let input = fixture_with_details(tmp.path());
    let out = tmp.path().join("out");
    let (code, stderr) = run(&["export", "-q", s(&input), "--to", "parquet", "-o", s(&out)]);
    assert_eq!(code, 0, "{stderr}");
    let files = data_files(&out);
    assert_eq!(
        files
            .iter()
            .map(|f| f.file_name().expect("name").to_string_lossy().into_owned())
            .collect::<Vec<_>>(),
        ["train-00000-of-00001.parquet"]
    );
    let (batches, metadata) = read(&files[0]);
    let batch = &batches[0];
    let schema = batch.schema();
    let names: Vec<&str> = schema.fields().iter().map(|f| f.name().as_str()).collect();
    assert_eq!(names, DOCUMENTED_COLUMNS);
    let steps = batch
        .column_by_name("steps")
        .expect("steps")
        .as_list::<i32>();
    let step = steps.values().as_struct();
    let step_names: Vec<&str> = step.fields().iter().map(|f| f.name().as_str()).collect();
    assert_eq!(step_names, DOCUMENTED_STEP_FIELDS);

    // Metadata: trajkit's version and the options, without the input paths.
    let kv = metadata
        .file_metadata()
        .key_value_metadata()
        .expect("key-value metadata");
    let get = |k: &str| {
        kv.iter()
            .find(|e| e.key == k)
            .and_then(|e| e.value.clone())
            .unwrap_or_default()
    };
    assert_eq!(get("trajkit.version"), env!("CARGO_PKG_VERSION"));
    let options: Value = serde_json::from_str(&get("trajkit.options")).expect("options JSON");
    assert_eq!(options["to"], "parquet");
    assert_eq!(options["row_group_bytes"], 100_000_000);
    assert!(options.get("inputs").is_none(), "{options}");

    // zstd everywhere, statistics and the page index on.
    for rg in metadata.row_groups() {
        for c in rg.columns() {
            assert!(
                matches!(c.compression(), Compression::ZSTD(_)),
                "{}",
                c.column_path()
            );
        }
        let id = rg.column(0);
        assert!(id.statistics().is_some(), "id statistics");
        assert!(id.offset_index_offset().is_some(), "offset index");
        assert!(id.column_index_offset().is_some(), "column index");
    }

    // Derived columns, as docs/export.md documents them, from the fixture's details.
    assert_eq!(strings(batch, "id").value(0), "loop-1#2");
    assert_eq!(strings(batch, "source_format").value(0), "reflexion");
    assert_eq!(strings(batch, "outcome").value(0), "failure");
    let f64_of = |name: &str| {
        batch
            .column_by_name(name)
            .expect(name)
            .as_primitive::<Float64Type>()
            .value(0)
    };
    assert_eq!(f64_of("reward"), 0.25);
    let i64_of = |name: &str| {
        batch
            .column_by_name(name)
            .expect(name)
            .as_primitive::<Int64Type>()
            .value(0)
    };
    assert_eq!(i64_of("num_steps"), 4);
    assert_eq!(i64_of("num_actions"), 2);
    assert_eq!(i64_of("num_observations"), 2);
    // "Fix the bug." (12) + "Look first." (11) + "héllo" (5 characters) + "Done." (5)
    assert_eq!(i64_of("num_chars"), 33);
    let components = batch
        .column_by_name("reward_components")
        .expect("components")
        .as_list::<i32>()
        .value(0);
    let components = components.as_struct();
    let names = components
        .column_by_name("name")
        .expect("name")
        .as_string::<i32>();
    let values = components
        .column_by_name("value")
        .expect("value")
        .as_primitive::<Float64Type>();
    let pairs: Vec<(&str, f64)> = (0..names.len())
        .map(|i| (names.value(i), values.value(i)))
        .collect();
    assert_eq!(pairs, [("tests", 0.5), ("style", 1.0)]);
    let reflections = batch
        .column_by_name("reflections")
        .expect("reflections")
        .as_list::<i32>()
        .value(0);
    let reflections = reflections.as_struct();
    assert_eq!(
        reflections.len(),
        1,
        "the non-object reflection is not a row"
    );
    let text = reflections
        .column_by_name("text")
        .expect("text")
        .as_string::<i32>();
    assert_eq!(text.value(0), "Check the path.");
    let iteration = reflections
        .column_by_name("iteration")
        .expect("iteration")
        .as_primitive::<Int64Type>();
    assert_eq!(iteration.value(0), 2);
    let lessons = reflections
        .column_by_name("lessons")
        .expect("lessons")
        .as_list::<i32>()
        .value(0);
    assert_eq!(lessons.as_string::<i32>().value(0), "read before edit");
    assert!(reflections
        .column_by_name("root_cause")
        .expect("root_cause")
        .is_null(0));

    // The steps: class tags, per-class fields, JSON text for kwargs, nulls elsewhere.
    let field = |name: &str| step.column_by_name(name).expect(name).as_string::<i32>();
    assert_eq!(field("class").value(1), "api_action");
    assert_eq!(field("function").value(1), "read");
    assert_eq!(field("kwargs").value(1), r#"{"path":"a.py"}"#);
    assert!(field("content").is_null(1));
    assert_eq!(field("source").value(2), "environment");
    assert_eq!(field("tool_call_id").value(2), "c1");
    let reward = step
        .column_by_name("reward")
        .expect("reward")
        .as_primitive::<Float64Type>();
    assert_eq!(reward.value(2), 0.5);
    assert!(reward.is_null(1));
    let details: Value = serde_json::from_str(strings(batch, "details").value(0)).expect("JSON");
    assert_eq!(details["reward_components"]["note"], "not a number");
}

#[test]
fn row_groups_and_shards_are_cut_by_bytes_and_rows_and_threads_do_not_matter() {
    let tmp = tempfile::tempdir().expect("temp dir");
    let Some(inputs) = corpus_inputs(tmp.path()) else {
        return;
    };
    let paths: Vec<&str> = inputs.iter().map(|(_, p)| s(p)).collect();
    let export = |name: &str, extra: &[&str]| {
        let dir = tmp.path().join(name);
        let mut args = vec!["export", "-q", "--to", "parquet", "-o", s(&dir)];
        args.extend(extra);
        args.extend(&paths);
        let (code, stderr) = run(&args);
        assert_eq!(code, 0, "{stderr}");
        dir
    };
    let whole = export("whole", &[]);
    let (batches, metadata) = read(&data_files(&whole)[0]);
    assert_eq!(metadata.num_row_groups(), 1);
    let ids: Vec<String> = batches
        .iter()
        .flat_map(|b| {
            let ids = strings(b, "id");
            (0..ids.len())
                .map(|i| ids.value(i).to_owned())
                .collect::<Vec<_>>()
        })
        .collect();

    let cut = export("cut", &["--row-group-bytes", "30000", "--shard-rows", "25"]);
    let files = data_files(&cut);
    let n = files.len();
    assert_eq!(n, ids.len().div_ceil(25));
    let mut cut_ids = Vec::new();
    let mut groups = 0;
    for (i, f) in files.iter().enumerate() {
        let name = f.file_name().expect("name").to_string_lossy().into_owned();
        assert_eq!(name, format!("train-{i:05}-of-{n:05}.parquet"));
        let (batches, metadata) = read(f);
        let rows: usize = batches.iter().map(RecordBatch::num_rows).sum();
        assert!(rows <= 25 && rows > 0, "{name}: {rows} rows");
        groups += metadata.num_row_groups();
        for b in &batches {
            let ids = strings(b, "id");
            cut_ids.extend((0..ids.len()).map(|i| ids.value(i).to_owned()));
        }
    }
    assert!(groups > n, "row groups of 30 kB: {groups} in {n} files");
    assert_eq!(cut_ids, ids, "the rows keep their order across files");

    let one = export(
        "threads-1",
        &["--threads", "1", "--row-group-bytes", "30000"],
    );
    let two = export(
        "threads-2",
        &["--threads", "2", "--row-group-bytes", "30000"],
    );
    assert!(
        concat(&data_files(&one)) == concat(&data_files(&two)),
        "Parquet bytes differ between --threads 1 and 2"
    );
}

fn step(class: &'static str) -> StepRow {
    StepRow {
        class,
        ..StepRow::default()
    }
}

/// Writes `rows` as a trajkit Parquet file.
fn write_rows(path: &Path, rows: &[Row]) {
    let mut columns = Columns::default();
    rows.iter().for_each(|r| columns.push(r));
    let batch = columns.finish().expect("batch");
    let mut w = ArrowWriter::try_new(File::create(path).expect("create"), batch.schema(), None)
        .expect("writer");
    w.write(&batch).expect("write");
    w.close().expect("close");
}

#[test]
fn bad_parquet_input_is_diagnosed_with_file_row_and_pointer() {
    let tmp = tempfile::tempdir().expect("temp dir");
    let good = |id: &str| Row {
        id: id.into(),
        schema_version: Some("1.5.0".into()),
        steps: vec![
            StepRow {
                content: Some("Hi".into()),
                source: Some("user"),
                ..step("text_observation")
            },
            StepRow {
                content: Some("Bye".into()),
                ..step("message_action")
            },
        ],
        details: "{}".into(),
        ..Row::default()
    };
    let mut bad_kwargs = good("bad-kwargs");
    bad_kwargs.steps[1] = StepRow {
        function: Some("f".into()),
        kwargs: Some("{not json".into()),
        ..step("api_action")
    };
    let mut bad_class = good("bad-class");
    bad_class.steps[0].class = "video_observation";
    let mut no_content = good("no-content");
    no_content.steps[1].content = None;
    let file = tmp.path().join("rows.parquet");
    write_rows(
        &file,
        &[good("a"), bad_kwargs, bad_class, no_content, good("b")],
    );
    let out = tmp.path().join("out.jsonl");
    let rejects = tmp.path().join("rejects.jsonl");
    let (code, stderr) = run(&["convert", s(&file), "-o", s(&out), "--rejects", s(&rejects)]);
    assert_eq!(code, 1, "{stderr}");
    let written = json_lines(&std::fs::read(&out).expect("out"));
    let ids: Vec<&str> = written.iter().filter_map(|t| t["id"].as_str()).collect();
    assert_eq!(ids, ["a", "b"]);
    let rejected = json_lines(&std::fs::read(&rejects).expect("rejects"));
    let found: Vec<(u64, String, String)> = rejected
        .iter()
        .map(|r| {
            let d = &r["diagnostics"][0];
            (
                r["line"].as_u64().unwrap_or_default(),
                d["pointer"].as_str().unwrap_or_default().to_owned(),
                d["rule"].as_str().unwrap_or_default().to_owned(),
            )
        })
        .collect();
    assert_eq!(
        found,
        [
            (2, "/content/1/kwargs".into(), "parquet-row".into()),
            (3, "/content/0/class_".into(), "parquet-row".into()),
            (4, "/content/1/content".into(), "parquet-row".into()),
        ],
        "{rejected:?}"
    );
    let file_name = file.to_string_lossy().into_owned();
    assert!(stderr.contains(&format!("{file_name}:2")), "{stderr}");

    // A file without trajkit's columns, a truncated file, and a JSON file named as Parquet.
    let foreign = tmp.path().join("foreign.parquet");
    let batch = RecordBatch::try_from_iter([(
        "id",
        Arc::new(StringArray::from(vec!["x"])) as Arc<dyn Array>,
    )])
    .expect("batch");
    let mut w = ArrowWriter::try_new(
        File::create(&foreign).expect("create"),
        batch.schema(),
        None,
    )
    .expect("writer");
    w.write(&batch).expect("write");
    w.close().expect("close");
    let (code, stderr) = run(&["convert", "-q", s(&foreign), "-o", s(&out)]);
    assert_ne!(code, 0);
    assert!(
        stderr.contains("foreign.parquet")
            && stderr.contains("not a trajkit Parquet file: no column `schema_version`"),
        "{stderr}"
    );
    let truncated = tmp.path().join("truncated.parquet");
    let bytes = std::fs::read(&file).expect("read");
    std::fs::write(&truncated, &bytes[..bytes.len() / 2]).expect("write");
    let (code, stderr) = run(&[
        "convert",
        "-q",
        "--from",
        "parquet",
        s(&truncated),
        "-o",
        s(&out),
    ]);
    assert_ne!(code, 0);
    assert!(
        stderr.contains("truncated.parquet") && stderr.contains("not a readable Parquet file"),
        "{stderr}"
    );
    let json_file = tmp.path().join("rows.jsonl");
    std::fs::write(&json_file, "{\"id\": 1}\n").expect("write");
    let (code, stderr) = run(&[
        "convert",
        "-q",
        "--from",
        "parquet",
        s(&json_file),
        "-o",
        s(&out),
    ]);
    assert_ne!(code, 0);
    assert!(stderr.contains("not a readable Parquet file"), "{stderr}");
}

#[test]
fn dedup_compares_trajectories_without_their_ids_in_adp_and_parquet() {
    let tmp = tempfile::tempdir().expect("temp dir");
    let input = tmp.path().join("dups.jsonl");
    let traj = |id: &str, text: &str| {
        json!({"schema_version": "1.5.0", "id": id, "content": [
            {"class_": "text_observation", "content": "Q", "name": null, "source": "user"},
            {"class_": "message_action", "content": text, "description": null}
        ], "details": {}})
        .to_string()
    };
    let lines = [traj("a", "x"), traj("b", "x"), traj("c", "y")];
    std::fs::write(&input, lines.join("\n") + "\n").expect("write");
    for to in ["adp", "parquet"] {
        let dir = tmp.path().join(to);
        let (code, stderr) = run(&[
            "export",
            "-q",
            "--dedup",
            "--to",
            to,
            s(&input),
            "-o",
            s(&dir),
        ]);
        assert_eq!(code, 0, "{stderr}");
        let manifest: Value =
            serde_json::from_slice(&std::fs::read(dir.join("manifest.json")).expect("manifest"))
                .expect("JSON");
        let counts = &manifest["counts"];
        assert_eq!(counts["written"], 2, "{to}: {counts}");
        assert_eq!(counts["filtered_by"]["duplicate"], 1, "{to}: {counts}");
    }
}

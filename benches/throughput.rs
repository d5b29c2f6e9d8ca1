//! Per-record hot paths, measured in bytes per second on the bundled sample trajectories:
//! checking a record (parse, schema, typed decode, rules), converting it to ADP 1.5.0 (from ADP,
//! from the seed formats memabra and Reflexion, and with a declarative spec), framing a
//! JSON-lines stream, reading records into nodes, and encoding Parquet. `scripts/bench.sh` measures whole commands on 1 GiB.

use std::path::Path;
use std::sync::Arc;

use divan::counter::BytesCount;
use divan::Bencher;
use trajkit::convert::{convert_record, ConvertOptions, Converted, Converter};
use trajkit::formats::{adp::Adp, lookup};
use trajkit::ingest::{Framer, LayoutHint, Provenance, RawRecord};
use trajkit::json::Shapes;
use trajkit::validate::check_adp;

fn main() {
    divan::main();
}

/// The sample trajectories as JSON lines, repeated to about 4 MB.
fn input() -> Vec<u8> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("sample_data/adp");
    let mut lines: Vec<Vec<u8>> = Vec::new();
    let mut names: Vec<_> = std::fs::read_dir(dir)
        .expect("sample_data/adp")
        .filter_map(|e| e.ok().map(|e| e.path()))
        .collect();
    names.sort();
    for p in names {
        let text = std::fs::read_to_string(&p).expect("sample");
        match serde_json::from_str::<serde_json::Value>(&text) {
            Ok(serde_json::Value::Array(items)) => {
                lines.extend(items.iter().map(|v| serde_json::to_vec(v).expect("json")))
            }
            _ => lines.extend(text.lines().map(|l| l.as_bytes().to_vec())),
        }
    }
    let mut out = Vec::new();
    while out.len() < 4 << 20 {
        for l in &lines {
            out.extend_from_slice(l);
            out.push(b'\n');
        }
    }
    out
}

fn records(bytes: &[u8]) -> Vec<RawRecord> {
    let file: Arc<str> = Arc::from("bench");
    Framer::new(bytes, LayoutHint::Lines, usize::MAX)
        .enumerate()
        .map(|(i, f)| RawRecord {
            provenance: Provenance {
                input: file.clone(),
                file: file.clone(),
                line: f.line,
                index: i as u64,
            },
            bytes: f.bytes,
            error: f.error,
        })
        .collect()
}

#[divan::bench]
fn frame_lines(bencher: Bencher) {
    let bytes = input();
    bencher
        .counter(BytesCount::of_slice(&bytes))
        .bench(|| Framer::new(&bytes[..], LayoutHint::Lines, usize::MAX).count());
}

#[divan::bench]
fn check_records(bencher: Bencher) {
    let bytes = input();
    let recs = records(&bytes);
    bencher.counter(BytesCount::of_slice(&bytes)).bench(|| {
        recs.iter()
            .filter(|r| check_adp(r).diagnostics.is_empty())
            .count()
    });
}

#[divan::bench]
fn convert_records_to_1_5(bencher: Bencher) {
    bench_convert(bencher, &Adp, &input());
}

/// The samples of a seed format (`sample_data/FORMAT/*.jsonl`), repeated to about 4 MB:
/// records read as nodes checked against the raw schema, their native data written as it is.
#[divan::bench(args = ["memabra", "reflexion"])]
fn convert_seed_records(bencher: Bencher, format: &str) {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("sample_data")
        .join(format);
    let mut lines = Vec::new();
    for entry in std::fs::read_dir(dir).expect("samples") {
        lines.extend(std::fs::read(entry.expect("entry").path()).expect("sample"));
    }
    let bytes = lines.repeat((4 << 20) / lines.len() + 1);
    bench_convert(bencher, lookup(format).expect("built in"), &bytes);
}

/// The bundled LedgerMind events, repeated to about 4 MB, read line by line into nodes: with
/// no schema (as sessions are read) and checked against the event schema (as events are
/// indexed).
#[divan::bench(args = ["no schema", "ledgermind"])]
fn read_nodes(bencher: Bencher, schema: &str) {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("sample_data/ledgermind/events.jsonl");
    let events = std::fs::read(path).expect("sample");
    let bytes = events.repeat((4 << 20) / events.len() + 1);
    let lines: Vec<&[u8]> = bytes.split(|&b| b == b'\n').collect();
    let shapes = match schema {
        "ledgermind" => trajkit::formats::ledgermind::SCHEMA
            .shapes(true)
            .expect("compiles"),
        _ => Shapes::any(),
    };
    bencher
        .counter(BytesCount::of_slice(&bytes))
        .bench(|| lines.iter().filter_map(|l| shapes.parse(l)).count());
}

/// Converts every record of `bytes` (JSON lines) with `converter` to ADP 1.5.0.
fn bench_convert(bencher: Bencher, converter: &dyn Converter, bytes: &[u8]) {
    let recs = records(bytes);
    let opts = ConvertOptions::default();
    bencher.counter(BytesCount::of_slice(bytes)).bench(|| {
        recs.iter()
            .filter(|r| matches!(convert_record(converter, r, &opts), Converted::Written(..)))
            .count()
    });
}

/// The declarative-converter example of docs/specs.md (`docs/spec-example`), repeated to about
/// 4 MB, converted with its spec: the regex rules, templates and argument parsing per turn.
#[divan::bench]
fn convert_records_with_spec(bencher: Bencher) {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("docs/spec-example");
    let spec_text = std::fs::read_to_string(dir.join("ticketbot.toml")).expect("spec");
    let spec = trajkit::formats::spec::load("ticketbot.toml", &spec_text).expect("spec loads");
    let line = std::fs::read(dir.join("tickets.jsonl")).expect("tickets");
    let bytes = line.repeat((4 << 20) / line.len() + 1);
    bench_convert(bencher, &spec, &bytes);
}

/// The sample trajectories taken apart into Parquet rows, gathered into record batches and
/// written as a zstd Parquet file in memory: the writer side of `export --to parquet`.
#[divan::bench]
fn encode_parquet(bencher: Bencher) {
    use trajkit::model::Trajectory;
    use trajkit::parquet::columns::Columns;
    use trajkit::parquet::{schema::schema, Row};

    let bytes = input();
    let trajectories: Vec<Trajectory> = bytes
        .split(|b| *b == b'\n')
        .filter(|l| !l.is_empty())
        .filter_map(|l| serde_json::from_slice(l).ok())
        .collect();
    bencher.counter(BytesCount::of_slice(&bytes)).bench(|| {
        let mut columns = Columns::default();
        for t in &trajectories {
            columns.push(&Row::new(t).expect("serializes"));
        }
        let batch = columns.finish().expect("batch");
        let props = parquet::file::properties::WriterProperties::builder()
            .set_compression(parquet::basic::Compression::ZSTD(Default::default()))
            .build();
        let mut w = parquet::arrow::ArrowWriter::try_new(Vec::new(), schema(false), Some(props))
            .expect("writer");
        w.write(&batch).expect("write");
        w.into_inner().expect("file").len()
    });
}

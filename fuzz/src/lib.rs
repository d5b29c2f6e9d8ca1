//! What the fuzz targets share: turning fuzz bytes into inputs (a file, a Ralph directory), and
//! the oracle every conversion must satisfy.
//!
//! The oracle: reading an input ends (every record consumes input, so a file of N bytes yields at
//! most N + 1 records), nothing panics, and every trajectory a converter writes is valid ADP in
//! the version it declares, as many lines as it says it wrote. Errors on bad input are the
//! expected outcome, not findings.

use std::fs;
use std::path::{Path, PathBuf};
use std::sync::OnceLock;

use trajkit::convert::{convert_record, ConvertOptions, Converted, Converter};
use trajkit::ingest::{FramedRecords, Provenance, RawRecord};
use trajkit::validate::check::check_adp;

/// The largest record framed, kept small so that oversize handling is exercised too.
pub const MAX_RECORD_BYTES: usize = 1 << 16;

/// A scratch directory of this process, made once and reused by every run.
pub fn scratch() -> &'static Path {
    static DIR: OnceLock<PathBuf> = OnceLock::new();
    DIR.get_or_init(|| {
        let dir = std::env::temp_dir().join(format!("trajkit-fuzz-{}", std::process::id()));
        let _ = fs::remove_dir_all(&dir);
        fs::create_dir_all(&dir).expect("scratch directory");
        dir
    })
}

/// Converts every record `converter` reads from `path` and checks the oracle.
pub fn convert_path(converter: &dyn Converter, path: &Path, input_len: usize) {
    let path = path.to_str().expect("scratch paths are UTF-8");
    let opts = ConvertOptions::default();
    let records: Box<dyn Iterator<Item = RawRecord>> = match converter.open_source(path, &opts) {
        Some(Ok(source)) => source,
        Some(Err(_)) => return,
        None => match FramedRecords::open(path, MAX_RECORD_BYTES) {
            Ok(framed) => Box::new(framed),
            Err(_) => return,
        },
    };
    for (i, record) in records.enumerate() {
        assert!(
            i <= input_len + 1,
            "{} read more records than the input has bytes: a step that consumes nothing",
            converter.name()
        );
        check_converted(&record, convert_record(converter, &record, &opts));
    }
}

/// Every line written is valid ADP, and there are as many as the converter says.
fn check_converted(record: &RawRecord, converted: Converted) {
    let Converted::Written(bytes, count, _, _, _) = converted else {
        return;
    };
    let lines: Vec<&[u8]> = bytes
        .split(|&b| b == b'\n')
        .filter(|l| !l.is_empty())
        .collect();
    assert_eq!(lines.len() as u64, count, "lines written against the count");
    for line in lines {
        let written = RawRecord {
            provenance: Provenance {
                line: 1,
                index: 0,
                ..record.provenance.clone()
            },
            bytes: line.to_vec(),
            error: None,
        };
        let checked = check_adp(&written);
        assert!(
            checked.diagnostics.is_empty(),
            "a converter wrote invalid ADP: {:?}\n{}",
            checked.diagnostics,
            String::from_utf8_lossy(line)
        );
    }
}

/// Splits `data` at the first `sep`: (before, after); all of it before when there is none.
pub fn split_once<'a>(data: &'a [u8], sep: &[u8]) -> (&'a [u8], &'a [u8]) {
    match data.windows(sep.len()).position(|w| w == sep) {
        Some(i) => (&data[..i], &data[i + sep.len()..]),
        None => (data, &[]),
    }
}

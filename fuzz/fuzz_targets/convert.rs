//! Every converter, and `--from auto`, over one input file made of the fuzz bytes.
//!
//! Byte 0 picks the converter (0: detect it as `--from auto` does), byte 1 the file name's
//! ending (which picks the layout, or a SQLite store); the rest is the file.
#![no_main]

use libfuzzer_sys::fuzz_target;
use trajkit::formats::{converters, detect::detect_input, path_converter};
use trajkit_fuzz::{convert_path, scratch};

const ENDINGS: [&str; 6] = [".jsonl", ".json", ".traj", ".db", "", ".parquet"];

fuzz_target!(|data: &[u8]| {
    let [pick, ending, body @ ..] = data else {
        return;
    };
    let path = scratch().join(format!(
        "input{}",
        ENDINGS[usize::from(*ending) % ENDINGS.len()]
    ));
    if std::fs::write(&path, body).is_err() {
        return;
    }
    let all = converters();
    let converter = match usize::from(*pick) % (all.len() + 1) {
        // As `--from auto` does: a path a format claims (a store, Parquet), else the first record.
        0 => match path_converter(&path) {
            Some(c) => c,
            None => match detect_input(path.to_str().expect("UTF-8 path")) {
                Ok(c) => c,
                Err(_) => return,
            },
        },
        i => all[i - 1],
    };
    convert_path(converter, &path, body.len());
});

//! The declarative-converter interpreter. Byte 0 picks what is fuzzed: 0, the spec text itself
//! (loaded and checked as `--spec` does, then used on a few records); otherwise the records,
//! as a JSON-lines file, through one of the shipped specs.
#![no_main]

use libfuzzer_sys::fuzz_target;
use trajkit::formats::spec;
use trajkit_fuzz::{convert_path, scratch, split_once};

const RECORDS: &[u8] = b"{\"id\":\"a\",\"conversations\":[{\"from\":\"human\",\"value\":\"hi\"},\
{\"from\":\"gpt\",\"value\":\"<execute>ls</execute>\"}]}\n";

fuzz_target!(|data: &[u8]| {
    let [pick, body @ ..] = data else {
        return;
    };
    let path = scratch().join("records.jsonl");
    let shipped = spec::embedded();
    match usize::from(*pick) % (shipped.len() + 1) {
        0 => {
            // The spec, then (after a `\n%%\n`) the records it converts.
            let (text, records) = split_once(body, b"\n%%\n");
            let Ok(text) = std::str::from_utf8(text) else {
                return;
            };
            // A spec that loads is leaked (its name lives as long as the process, as with
            // `--spec`): a few bytes per loaded spec, by design.
            let Ok(converter) = spec::load("fuzz.toml", text) else {
                return;
            };
            let records = if records.is_empty() { RECORDS } else { records };
            if std::fs::write(&path, records).is_ok() {
                convert_path(&converter, &path, records.len());
            }
        }
        i => {
            if std::fs::write(&path, body).is_ok() {
                convert_path(&shipped[i - 1], &path, body.len());
            }
        }
    }
});

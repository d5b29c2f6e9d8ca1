//! The Ralph episodic-memory reader over a directory made of the fuzz bytes: the parts between
//! `\n%%\n` separators become, in order, the files of `FILES` (missing parts, missing files).
#![no_main]

use libfuzzer_sys::fuzz_target;
use trajkit::formats::lookup;
use trajkit_fuzz::{convert_path, scratch, split_once};

const FILES: [&str; 8] = [
    "tasks/task-001/metadata.json",
    "tasks/task-001/reflections.jsonl",
    "tasks/task-001/attempts/001/attempt.json",
    "tasks/task-001/attempts/001/plan.md",
    "tasks/task-001/attempts/001/outcome.json",
    "tasks/task-001/attempts/001/actions.jsonl",
    "tasks/task-001/attempts/002/actions.jsonl",
    "tasks/task-002/attempts/001/actions.jsonl",
];

fuzz_target!(|data: &[u8]| {
    let root = scratch().join("ralph");
    let _ = std::fs::remove_dir_all(&root);
    let mut rest = data;
    for name in FILES {
        if rest.is_empty() {
            break;
        }
        let (part, after) = split_once(rest, b"\n%%\n");
        rest = after;
        let path = root.join(name);
        if let Some(dir) = path.parent() {
            let _ = std::fs::create_dir_all(dir);
        }
        let _ = std::fs::write(&path, part);
    }
    let ralph = lookup("ralph").expect("ralph is built in");
    convert_path(ralph, &root, data.len());
});

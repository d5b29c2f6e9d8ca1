//! The pipeline-file loader: the fuzz bytes as `pipeline.toml` beside a copy of `sample_data/`
//! (so that its paths resolve), loaded and checked as `trajkit run --check` does, and its
//! effective configuration printed as `run --print-config` does.
#![no_main]

use std::path::{Path, PathBuf};
use std::sync::OnceLock;

use libfuzzer_sys::fuzz_target;
use trajkit::commands::run::file::check;
use trajkit::config::pipeline::parse;
use trajkit_fuzz::scratch;

/// A copy of `sample_data/` in the scratch directory, made once.
fn samples() -> &'static Path {
    static DIR: OnceLock<PathBuf> = OnceLock::new();
    DIR.get_or_init(|| {
        let to = scratch().join("sample_data");
        copy(
            &Path::new(env!("CARGO_MANIFEST_DIR")).join("../sample_data"),
            &to,
        );
        to
    })
}

fn copy(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).expect("scratch copy");
    for entry in std::fs::read_dir(from).expect("sample_data") {
        let entry = entry.expect("entry");
        let target = to.join(entry.file_name());
        if entry.path().is_dir() {
            copy(&entry.path(), &target);
        } else {
            std::fs::copy(entry.path(), &target).expect("copy a sample");
        }
    }
}

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    let path = samples().join("pipeline.toml");
    let path = path.to_str().expect("UTF-8 path");
    if let Ok(pipeline) = parse(path, text) {
        let _ = check(&pipeline, None);
        let _ = pipeline.effective_toml();
    }
});

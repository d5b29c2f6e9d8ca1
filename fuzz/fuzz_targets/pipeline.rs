//! The pipeline-file loader: the fuzz bytes as `pipeline.toml` beside a copy of `sample_data/`
//! (so that its paths resolve), checked as `trajkit run --check` does. The loader is still part
//! of the command line, so this target compiles the command-line modules themselves; it will
//! call the library once the loader moves there.
#![no_main]

#[allow(dead_code, unused_imports)]
#[path = "../../src/cli/mod.rs"]
mod cli;

use std::path::{Path, PathBuf};
use std::sync::OnceLock;

use clap::Parser;
use libfuzzer_sys::fuzz_target;
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
    let path = samples().join("pipeline.toml");
    if std::fs::write(&path, data).is_err() {
        return;
    }
    let path = path.to_str().expect("UTF-8 path");
    if let Ok(cli) = cli::Cli::try_parse_from(["trajkit", "-q", "run", "--check", path]) {
        let _ = cli.run();
    }
});

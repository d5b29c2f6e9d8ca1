//! A black-box property test: mutated copies of every bundled sample, converted with
//! `--from auto`, must end within a time bound, exit with 0–3, keep the accounting
//! (`records in = written + rejected`, one rejects line per rejected record), and write only
//! valid, non-empty ADP; a run that fails leaves no output and no temporary file behind.
//!
//! The mutants are drawn from a seeded generator: the same seed gives the same mutants. CI runs
//! `TRAJKIT_MUTANTS` per sample (default 12) with a fixed seed; a longer campaign sets
//! `TRAJKIT_MUTANTS=500 TRAJKIT_MUTANTS_SEED=$RANDOM` (docs/fuzzing.md). A failing mutant is
//! saved under `target/mutants-failures/` with the command that reproduces it.

use std::fs;
use std::path::{Path, PathBuf};
use std::time::Duration;

use crate::common::{self, copy_dir, sample_data, trajkit};

/// How long one conversion of a small mutant may take before it counts as a hang.
const TIME_BOUND: Duration = Duration::from_secs(15);

/// splitmix64: a small, seeded generator (no randomness the seed does not fix).
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    /// A number in `0..n` (`n > 0`).
    fn below(&mut self, n: usize) -> usize {
        (self.next() % n as u64) as usize
    }
}

/// Bytes that matter to JSON framing and parsing, and values that stress readers.
const TOKENS: &[&[u8]] = &[
    b",",
    b"]",
    b"}",
    b"[",
    b"{",
    b"\"",
    b"\\",
    b"\n",
    b":",
    b"null",
    b"0",
    b"-",
    b"1e999",
    b"18446744073709551616",
    b"\"\\ud800\"",
    b"\xff",
    b"\x00",
    b"\"id\":\"\",",
    b"\"content\":[],",
    b"{\"a\":1,\"a\":2}",
    b"},",
];

/// One random edit of `bytes`.
fn mutate_once(bytes: &mut Vec<u8>, rng: &mut Rng) {
    let at = |rng: &mut Rng, len: usize| rng.below(len + 1);
    match rng.below(9) {
        0 if !bytes.is_empty() => {
            let i = rng.below(bytes.len());
            bytes[i] = rng.next() as u8;
        }
        1 => {
            let i = at(rng, bytes.len());
            let token = TOKENS[rng.below(TOKENS.len())];
            bytes.splice(i..i, token.iter().copied());
        }
        2 if !bytes.is_empty() => {
            let i = rng.below(bytes.len());
            let end = (i + 1 + rng.below(64)).min(bytes.len());
            bytes.drain(i..end);
        }
        3 if !bytes.is_empty() => {
            let i = rng.below(bytes.len());
            let end = (i + 1 + rng.below(256)).min(bytes.len());
            let span = bytes[i..end].to_vec();
            let to = at(rng, bytes.len());
            bytes.splice(to..to, span);
        }
        4 => bytes.truncate(at(rng, bytes.len())),
        5 => {
            // A stray separator after the last document or line.
            let stray: &[u8] = [&b","[..], b"]", b"}", b",\n"][rng.below(4)];
            bytes.extend_from_slice(stray);
        }
        6 => {
            // The whole input as UTF-16 with a byte-order mark.
            let text = String::from_utf8_lossy(bytes).into_owned();
            let mut utf16 = vec![0xFF, 0xFE];
            utf16.extend(text.encode_utf16().flat_map(u16::to_le_bytes));
            *bytes = utf16;
        }
        7 => {
            // Two lines swapped.
            let mut lines: Vec<Vec<u8>> =
                bytes.split(|&b| b == b'\n').map(<[u8]>::to_vec).collect();
            if lines.len() > 1 {
                let (a, b) = (rng.below(lines.len()), rng.below(lines.len()));
                lines.swap(a, b);
                *bytes = lines.join(&b'\n');
            }
        }
        _ => {
            let i = at(rng, bytes.len());
            let digits = format!("{}", rng.next());
            bytes.splice(i..i, digits.bytes());
        }
    }
}

/// The sample files mutated: every file under `sample_data/` but the pipeline and side files,
/// each with its path relative to `sample_data/` (so that a Ralph directory stays one).
fn samples() -> Vec<PathBuf> {
    fn walk(dir: &Path, out: &mut Vec<PathBuf>) {
        let mut entries: Vec<PathBuf> = fs::read_dir(dir)
            .expect("sample_data is readable")
            .map(|e| e.expect("directory entry").path())
            .collect();
        entries.sort();
        for path in entries {
            if path.is_dir() {
                walk(&path, out);
            } else {
                out.push(path);
            }
        }
    }
    let root = sample_data();
    let mut files = Vec::new();
    walk(&root, &mut files);
    files
        .into_iter()
        .filter_map(|p| p.strip_prefix(&root).ok().map(Path::to_path_buf))
        .filter(|p| !p.starts_with("side") && p != Path::new("pipeline.toml"))
        .collect()
}

/// The input to convert for a mutated sample: the sample's own file, or for a file inside the
/// Ralph directory, the directory (copied whole, with the one file mutated).
fn stage(dir: &Path, sample: &Path, bytes: &[u8]) -> PathBuf {
    let top = sample.components().next().expect("a relative path");
    if top.as_os_str() == "ralph" {
        copy_dir(&sample_data().join("ralph"), &dir.join("ralph"));
        fs::write(dir.join(sample), bytes).expect("write the mutant");
        return dir.join("ralph");
    }
    let name = sample.file_name().expect("a file name");
    let path = dir.join(name);
    fs::write(&path, bytes).expect("write the mutant");
    path
}

/// `records in`, `written` and `rejected` of convert's summary line.
fn summary_counts(stderr: &str) -> Option<(u64, u64, u64)> {
    let line = stderr.lines().rev().find(|l| l.starts_with("convert: "))?;
    let number_before = |word: &str| -> Option<u64> {
        let end = line.find(word)?;
        line[..end]
            .trim_end()
            .rsplit([' ', '('])
            .next()?
            .parse()
            .ok()
    };
    Some((
        number_before(" records in")?,
        number_before(" written")?,
        number_before(" rejected")?,
    ))
}

/// Why the outcome of converting a mutant breaks the property, if it does.
fn check_outcome(dir: &Path, input: &Path) -> Result<(), String> {
    let out = dir.join("out.jsonl");
    let rejects = dir.join("rejects.jsonl");
    let output = trajkit()
        .args(["--threads", "2", "convert", "--from", "auto"])
        .arg(input)
        .arg("-o")
        .arg(&out)
        .arg("--rejects")
        .arg(&rejects)
        .timeout(TIME_BOUND)
        .output()
        .map_err(|e| format!("could not run trajkit: {e}"))?;
    let stderr = String::from_utf8_lossy(&output.stderr);
    let code = output
        .status
        .code()
        .ok_or_else(|| format!("ended by a signal or the {TIME_BOUND:?} time bound (a hang?)"))?;
    if code > 3 {
        return Err(format!("exit {code}\n{stderr}"));
    }
    let leftovers: Vec<String> = fs::read_dir(dir)
        .map_err(|e| e.to_string())?
        .filter_map(|e| e.ok())
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .filter(|n| n.contains(".tmp-") || n.ends_with(".partial"))
        .collect();
    if !leftovers.is_empty() {
        return Err(format!("temporary files left behind: {leftovers:?}"));
    }
    if code >= 2 {
        // A usage or I/O error: nothing may look written.
        return match out.exists() {
            true => Err(format!(
                "exit {code} but {} was written\n{stderr}",
                out.display()
            )),
            false => Ok(()),
        };
    }
    let (records, written, rejected) = summary_counts(&stderr)
        .ok_or_else(|| format!("exit {code} without a summary line\n{stderr}"))?;
    if records != written + rejected {
        return Err(format!(
            "accounting: {records} in != {written} written + {rejected} rejected"
        ));
    }
    let reject_lines = fs::read(&rejects)
        .map(|b| common::json_lines(&b).len())
        .unwrap_or(0);
    if reject_lines as u64 != rejected {
        return Err(format!(
            "{rejected} rejected but {reject_lines} lines in the rejects file"
        ));
    }
    let written_bytes = fs::read(&out).map_err(|e| format!("no output: {e}"))?;
    for trajectory in common::json_lines(&written_bytes) {
        let steps = trajectory["content"].as_array().map_or(0, Vec::len);
        if steps == 0 {
            return Err(format!(
                "an empty trajectory was written: {}",
                trajectory["id"]
            ));
        }
    }
    let validate = trajkit()
        .arg("validate")
        .arg(&out)
        .timeout(TIME_BOUND)
        .output()
        .map_err(|e| e.to_string())?;
    if !validate.status.success() {
        return Err(format!(
            "convert wrote invalid ADP:\n{}",
            String::from_utf8_lossy(&validate.stdout)
        ));
    }
    Ok(())
}

/// Saves a failing mutant with the command that reproduces it, and returns where.
fn save_failure(sample: &Path, index: usize, bytes: &[u8]) -> PathBuf {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("target/mutants-failures")
        .join(format!(
            "{}-{index}",
            sample.to_string_lossy().replace('/', "_")
        ));
    let _ = fs::create_dir_all(&dir);
    let file = dir.join(sample.file_name().expect("a file name"));
    let _ = fs::write(&file, bytes);
    file
}

#[test]
fn mutated_samples_end_in_bounded_time_with_exact_accounting_and_valid_output() {
    let per_sample: usize = std::env::var("TRAJKIT_MUTANTS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(12);
    let seed: u64 = std::env::var("TRAJKIT_MUTANTS_SEED")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(0x7A4A_5EED);
    let mut failures = Vec::new();
    let mut runs = 0;
    for sample in samples() {
        let original = fs::read(sample_data().join(&sample)).expect("read a sample");
        for index in 0..per_sample {
            // Each mutant's generator depends only on the seed, the sample and its index.
            let name_hash = sample
                .to_string_lossy()
                .bytes()
                .fold(0u64, |h, b| h.wrapping_mul(31).wrapping_add(u64::from(b)));
            let mut rng = Rng(seed ^ name_hash.rotate_left(17) ^ (index as u64) << 40);
            let mut bytes = original.clone();
            for _ in 0..1 + rng.below(3) {
                mutate_once(&mut bytes, &mut rng);
            }
            let dir = tempfile::tempdir().expect("temporary directory");
            let input = stage(dir.path(), &sample, &bytes);
            runs += 1;
            if let Err(why) = check_outcome(dir.path(), &input) {
                let saved = save_failure(&sample, index, &bytes);
                failures.push(format!(
                    "{} mutant {index}: {why}\n  reproduce: trajkit convert --from auto {}",
                    sample.display(),
                    saved.display()
                ));
            }
        }
    }
    assert!(runs > 0, "no sample was mutated");
    assert!(
        failures.is_empty(),
        "{} of {runs} mutants broke the property (seed {seed}):\n{}",
        failures.len(),
        failures.join("\n")
    );
}

/// Mutated copies of the bundled pipeline file, checked with `run --check` beside a copy of
/// `sample_data/` (so that its paths resolve): each ends within the time bound with an exit code
/// of 0–3 and writes nothing.
#[test]
fn mutated_pipeline_files_are_checked_in_bounded_time_without_writing() {
    let per_file: usize = std::env::var("TRAJKIT_MUTANTS")
        .ok()
        .and_then(|v| v.parse().ok())
        .map_or(60, |n: usize| n * 5);
    let seed: u64 = std::env::var("TRAJKIT_MUTANTS_SEED")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(0x7A4A_5EED);
    let original = fs::read(sample_data().join("pipeline.toml")).expect("read the pipeline");
    let dir = tempfile::tempdir().expect("temporary directory");
    let samples = dir.path().join("sample_data");
    copy_dir(&sample_data(), &samples);
    let mut failures = Vec::new();
    for index in 0..per_file {
        let mut rng = Rng(seed ^ (index as u64) << 32);
        let mut bytes = original.clone();
        for _ in 0..1 + rng.below(3) {
            mutate_once(&mut bytes, &mut rng);
        }
        let pipeline = samples.join("pipeline.toml");
        fs::write(&pipeline, &bytes).expect("write the mutant");
        let output = trajkit()
            .args(["run", "--check"])
            .arg(&pipeline)
            .timeout(TIME_BOUND)
            .output()
            .expect("run trajkit");
        let code = output.status.code();
        let wrote = dir.path().join("out").exists();
        if !matches!(code, Some(0..=3)) || wrote {
            let saved = save_failure(Path::new("pipeline.toml"), index, &bytes);
            failures.push(format!(
                "mutant {index}: exit {code:?}, wrote outputs: {wrote}\n{}\n  saved: {}",
                String::from_utf8_lossy(&output.stderr),
                saved.display()
            ));
        }
    }
    assert!(
        failures.is_empty(),
        "{} of {per_file} pipeline mutants broke the property (seed {seed}):\n{}",
        failures.len(),
        failures.join("\n")
    );
}
